package mysqlstore_test

import (
	"context"
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

// The global holdout against a real MariaDB (docs/CONTRACT.md §15): its phases as the setting's
// history, part of every snapshot, and its counting by the worker as the experiment of popup 0.

// TestHoldoutPhasesAreTheSettingsHistory: setting a percentage starts phase 1 with a fresh salt
// and a new config version; the same percentage writes nothing; another ends it and starts the
// next with the same salt; 0 ends it. The snapshot carries the running phase only.
func TestHoldoutPhasesAreTheSettingsHistory(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	ctx := context.Background()
	settings, repo := mysqlstore.NewSettingsRepo(db), mysqlstore.NewPopupRepo(db)

	h, err := settings.Holdout(ctx)
	require.NoError(t, err)
	assert.Equal(t, popup.Holdout{}, h, "never set")
	v0, _, team, err := repo.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, popup.Holdout{}, team.Holdout)

	at := t0.Add(123 * time.Millisecond)
	old, cur, changed, err := settings.SetHoldout(ctx, "alice", 10, at)
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, popup.Holdout{}, old)
	assert.Equal(t, popup.Holdout{Percent: 10, Salt: cur.Salt, Phase: 1, StartedAt: at}, cur)
	v1, _, team, err := repo.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, v0+1, v1, "a holdout change is a config change")
	assert.Equal(t, cur, team.Holdout)

	_, same, changed, err := settings.SetHoldout(ctx, "bob", 10, at.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, cur, same)
	v, _, _, err := repo.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, v1, v, "the same percentage writes nothing, not even a version")

	_, second, changed, err := settings.SetHoldout(ctx, "bob", 15, at.Add(2*time.Hour))
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, popup.Holdout{Percent: 15, Salt: cur.Salt, Phase: 2, StartedAt: at.Add(2 * time.Hour)}, second)

	_, _, changed, err = settings.SetHoldout(ctx, "carol", 0, at.Add(3*time.Hour))
	require.NoError(t, err)
	require.True(t, changed)
	_, _, team, err = repo.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, popup.Holdout{}, team.Holdout, "no running phase: no holdout")

	phases, err := settings.HoldoutPhases(ctx)
	require.NoError(t, err)
	ended1, ended2 := cur, second
	ended1.EndedAt, ended2.EndedAt = at.Add(2*time.Hour), at.Add(3*time.Hour)
	assert.Equal(t, []report.HoldoutPhase{
		{Holdout: ended2, StartedBy: "bob", EndedBy: "carol"},
		{Holdout: ended1, StartedBy: "alice", EndedBy: "bob"},
	}, phases)
}

// TestHoldoutIsCountedOnceAndAttributed: holdout events and the others' marked impressions count
// each group's users once per phase, change no popup's state and no impression count, and
// conversions are attributed to the groups under §14's rule; a batch written twice counts once,
// and a cohort's counts are those of the users first exposed in it.
func TestHoldoutIsCountedOnceAndAttributed(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	ctx := context.Background()
	w := mysqlstore.NewEventWriter(db)
	stats := mysqlstore.NewStatsRepo(db)
	createGoal(t, db, popup.Goal{Key: "purchase", Name: "Purchase", Window: 72 * time.Hour, Value: popup.GoalValueSum})
	const key = "5a175a175a175a17-p1"
	held := []event.ArmRef{{PopupID: 0, Salt: key, Arm: "holdout"}}
	others := []event.ArmRef{{PopupID: 0, Salt: key, Arm: "others"}}
	holdoutEvent := func(id, uid string, at time.Time) event.Event {
		return event.Event{ID: id, UID: uid, PopupID: 7, Action: event.Holdout, At: at, DecisionID: id, Arms: held}
	}
	impression := func(id, uid string, at time.Time, arms []event.ArmRef) event.Event {
		return event.Event{ID: id, UID: uid, PopupID: 7, Action: event.Impression, At: at, NextShowAt: at.Add(time.Hour),
			Impressions: 1, DayCount: 1, DecisionID: id, Arms: arms}
	}
	conversion := func(id, uid string, value float64, at time.Time) event.Event {
		return event.Event{ID: id, UID: uid, Action: event.Conversion, Goal: "purchase", Value: value, At: at}
	}
	batch := []event.Event{
		holdoutEvent("h1.h", "h1", t0),
		holdoutEvent("h1b.h", "h1", t0.Add(25*time.Hour)), // the next day: an exposure, not another user
		holdoutEvent("h2.h", "h2", t0.Add(48*time.Hour)),
		impression("o1", "o1", t0, others),
		impression("o1b", "o1", t0.Add(2*time.Hour), nil), // later that day: not marked
		impression("o2", "o2", t0, others),
		conversion("c1", "h1", 10, t0.Add(time.Hour)),
		conversion("c2", "o1", 5, t0.Add(time.Hour)),
		conversion("c3", "o1", 7, t0.Add(80*time.Hour)), // past the window
		conversion("c4", "o2", 1, t0.Add(-time.Minute)), // before the exposure
	}
	require.NoError(t, w.WriteBatch(ctx, batch))
	check := func(when string) {
		days, err := stats.ExperimentDays(ctx, popup.HoldoutPopupID, key, time.UTC)
		require.NoError(t, err)
		users, exposures := map[string]int64{}, map[string]int64{}
		for _, d := range days {
			users[d.Arm] += d.ExposedUsers
			exposures[d.Arm] += d.Exposures
		}
		assert.Equal(t, map[string]int64{"holdout": 2, "others": 2}, users, when)
		assert.Equal(t, map[string]int64{"holdout": 3, "others": 2}, exposures, when)
		assert.Equal(t, map[string]report.GoalCount{
			"holdout/purchase": {Arm: "holdout", Goal: "purchase", ConvertedUsers: 1, Conversions: 1, ValueSum: 10, ValueSqSum: 100},
			"others/purchase":  {Arm: "others", Goal: "purchase", ConvertedUsers: 1, Conversions: 1, ValueSum: 5, ValueSqSum: 25},
		}, goalArms(t, db, popup.HoldoutPopupID, key), when)
	}
	check("first write")
	require.NoError(t, w.WriteBatch(ctx, batch))
	check("the same batch again")

	var states, impressions int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_user_state WHERE uid IN ('h1', 'h2')`).Scan(&states))
	assert.Zero(t, states, "a holdout event changes no popup's state")
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COALESCE(SUM(impressions), 0) FROM popup_daily_stats WHERE popup_id = 7`).Scan(&impressions))
	assert.Equal(t, 3, impressions, "holdout events are not impressions")

	// The users first exposed on t0's day alone: h1, o1 and o2 (h2 came two days later).
	cohort, err := stats.GoalCountsExposedIn(ctx, popup.HoldoutPopupID, key, t0.Truncate(24*time.Hour), t0.Truncate(24*time.Hour).Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []report.GoalCount{
		{Arm: "holdout", Goal: "purchase", ConvertedUsers: 1, Conversions: 1, ValueSum: 10, ValueSqSum: 100},
		{Arm: "others", Goal: "purchase", ConvertedUsers: 1, Conversions: 1, ValueSum: 5, ValueSqSum: 25},
	}, cohort)
	later, err := stats.GoalCountsExposedIn(ctx, popup.HoldoutPopupID, key, t0.Add(24*time.Hour), t0.Add(72*time.Hour))
	require.NoError(t, err)
	assert.Empty(t, later, "h2, exposed later, converted nothing")
}
