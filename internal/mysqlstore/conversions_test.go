package mysqlstore_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
	"popupsvc/internal/testenv"
)

// Conversions in the worker's batches against a real MariaDB (docs/CONTRACT.md §14): logged once
// per (uid, event_id), attributed to every phase that exposed the user within the goal's window
// before them, a user counted once per goal and phase, values summed (with their squares per
// user), and a batch written twice counting once.

// createGoal stores a goal as the admin API does.
func createGoal(t *testing.T, db *sql.DB, g popup.Goal) {
	t.Helper()
	repo := mysqlstore.NewGoalRepo(db)
	require.NoError(t, repo.InTx(context.Background(), func(tx *mysqlstore.Tx) error {
		_, err := tx.InsertGoal(context.Background(), g, t0)
		return err
	}))
}

// goalArms reads popup_experiment_goal as arm/goal → counts.
func goalArms(t *testing.T, db *sql.DB, popupID int64, salt string) map[string]report.GoalCount {
	t.Helper()
	counts, err := mysqlstore.NewStatsRepo(db).GoalCounts(context.Background(), popupID, salt)
	require.NoError(t, err)
	out := map[string]report.GoalCount{}
	for _, c := range counts {
		out[c.Arm+"/"+c.Goal] = c
	}
	return out
}

func TestConversionsAreAttributedOnceWithinTheWindow(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	ctx := context.Background()
	w := mysqlstore.NewEventWriter(db)
	createGoal(t, db, popup.Goal{Key: "purchase", Name: "Purchase", Window: 72 * time.Hour, Value: popup.GoalValueSum})
	createGoal(t, db, popup.Goal{Key: "signup", Name: "Sign-up", Window: time.Hour, Value: popup.GoalValueNone})

	exposure := func(id, uid string, p int64, salt, arm string, at time.Time) event.Event {
		action := event.Impression
		if arm == popup.ControlArm {
			action = event.Exposure
		}
		return event.Event{ID: id, UID: uid, PopupID: p, Action: action, At: at, NextShowAt: at.Add(time.Hour), Impressions: 1,
			Arms: []event.ArmRef{{PopupID: p, Salt: salt, Arm: arm}}}
	}
	conversion := func(id, uid, goal string, value float64, at time.Time) event.Event {
		return event.Event{ID: id, UID: uid, Action: event.Conversion, Goal: goal, Value: value, At: at}
	}
	// u1 in arm a of popup 1 and in the control of popup 2; u2 in arm b of popup 1; u3 never
	// exposed. In one batch the exposures come first, whatever the queue order.
	batch := []event.Event{
		conversion("o1", "u1", "purchase", 10, t0.Add(time.Hour)),
		exposure("d1", "u1", 1, "s1", "a", t0),
		exposure("d2", "u1", 2, "s2", popup.ControlArm, t0.Add(30*time.Minute)),
		exposure("d3", "u2", 1, "s1", "b", t0),
		conversion("o2", "u1", "purchase", 5, t0.Add(2*time.Hour)),
		conversion("o3", "u2", "purchase", 7, t0.Add(-time.Minute)),    // before the exposure: nothing
		conversion("o4", "u2", "purchase", 3, t0.Add(73*time.Hour)),    // past the window: nothing
		conversion("o5", "u2", "signup", 99, t0.Add(10*time.Minute)),   // a goal without values
		conversion("o6", "u3", "purchase", 50, t0.Add(time.Hour)),      // never exposed: logged only
		conversion("o7", "u1", "gone", 1, t0.Add(time.Hour)),           // no such goal: logged only
		conversion("o1", "u1", "purchase", 10, t0.Add(time.Hour)),      // a repeat within the batch
		conversion("o8", "u2", "signup", 0, t0.Add(59*time.Minute)),    // u2 converts twice: one user
		conversion("o9", "u2", "signup", 0, t0.Add(61*time.Minute)),    // past the hour
		conversion("o10", "u1", "purchase", 1, t0.Add(29*time.Minute)), // before popup 2 exposed u1: popup 1 only
	}
	require.NoError(t, w.WriteBatch(ctx, batch))
	want1 := map[string]report.GoalCount{
		"a/purchase": {Arm: "a", Goal: "purchase", ConvertedUsers: 1, Conversions: 3, ValueSum: 16, ValueSqSum: 256},
		"b/signup":   {Arm: "b", Goal: "signup", ConvertedUsers: 1, Conversions: 2},
	}
	want2 := map[string]report.GoalCount{
		"control/purchase": {Arm: "control", Goal: "purchase", ConvertedUsers: 1, Conversions: 2, ValueSum: 15, ValueSqSum: 225},
	}
	assert.Equal(t, want1, goalArms(t, db, 1, "s1"))
	assert.Equal(t, want2, goalArms(t, db, 2, "s2"))
	var logged int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_conversion_log`).Scan(&logged))
	assert.Equal(t, 10, logged, "every distinct (uid, event_id), attributed or not")

	// The same batch again (a worker killed between commit and acknowledgement): nothing counts
	// twice.
	require.NoError(t, w.WriteBatch(ctx, batch))
	assert.Equal(t, want1, goalArms(t, db, 1, "s1"))
	assert.Equal(t, want2, goalArms(t, db, 2, "s2"))

	// A later batch: a known event id among new ones, and a user already converted adds value
	// (the square of the user's sum moves from 16² to 20²) but no user.
	require.NoError(t, w.WriteBatch(ctx, []event.Event{
		conversion("o2", "u1", "purchase", 5, t0.Add(2*time.Hour)),
		conversion("o11", "u1", "purchase", 4, t0.Add(3*time.Hour)),
	}))
	got := goalArms(t, db, 1, "s1")["a/purchase"]
	assert.Equal(t, report.GoalCount{Arm: "a", Goal: "purchase", ConvertedUsers: 1, Conversions: 4, ValueSum: 20, ValueSqSum: 400}, got)
}
