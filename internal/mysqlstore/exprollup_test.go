package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

// expUsers is how many users the experiment events spread over.
const expUsers = 50

// expSalt is popup p's experiment salt in these tests.
func expSalt(p int64) string { return fmt.Sprintf("salt-%d", p) }

// expArm is user u's arm in popup p's experiment: popup 1 has variants a, b and a control,
// popup 2 variants a and b (the assignment is deterministic, so a user keeps one arm).
func expArm(p int64, u int) string {
	if p == 1 {
		return []string{"a", "b", "control"}[u%3]
	}
	return []string{"a", "b"}[u%2]
}

// expEventAt is event i of the experiment set: the first 200 expose every user twice in each of
// popups 1 and 2 (a control user gets an exposure, the others an impression); the rest are clicks,
// closes and more exposures of the same users. Ten minutes apart: about three UTC days.
func expEventAt(i int) event.Event {
	u := i % expUsers
	p := int64(1 + (i/expUsers)%2)
	arm := expArm(p, u)
	at := t0.Add(time.Duration(i) * 10 * time.Minute)
	e := event.Event{ID: fmt.Sprintf("x%d", i), UID: fmt.Sprintf("u%d", u), PopupID: p, At: at, NextShowAt: at.Add(time.Hour),
		Arms: []event.ArmRef{{PopupID: p, Salt: expSalt(p), Arm: arm}}}
	switch {
	case i >= 200 && i%3 == 0:
		e.Action = event.Click
	case i >= 200 && i%3 == 1:
		e.Action = event.Close
	case arm == "control":
		e.Action, e.Impressions = event.Exposure, 1+i/100
	default:
		e.Action, e.Impressions, e.DayCount = event.Impression, 1+i/100, 1
	}
	return e
}

// expUserRow is one popup_experiment_user row.
type expUserRow struct {
	Arm                       string
	FirstExposed              time.Time
	Exposures, Clicks, Closes int64
	Clicked                   bool
}

func readExpUsers(t *testing.T, db *sql.DB) map[string]expUserRow {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT popup_id, salt, uid, arm, first_exposed_at, exposures, clicks, closes,
		first_click_at IS NOT NULL FROM popup_experiment_user`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]expUserRow{}
	for rows.Next() {
		var p int64
		var salt, uid string
		var r expUserRow
		require.NoError(t, rows.Scan(&p, &salt, &uid, &r.Arm, &r.FirstExposed, &r.Exposures, &r.Clicks, &r.Closes, &r.Clicked))
		out[fmt.Sprintf("%d/%s/%s", p, salt, uid)] = r
	}
	require.NoError(t, rows.Err())
	return out
}

// expDailyRow is the counts of one popup_experiment_slot row or of a sum of them (or of
// popup_experiment_daily, the UTC days before it).
type expDailyRow struct{ ExposedUsers, Exposures, ClickedUsers, Clicks, Closes int64 }

// quarterHour is the SQL of the UTC quarter hour of a DATETIME column, as YYYY-MM-DD HH:MM.
func quarterHour(col string) string {
	return `DATE_FORMAT(TIMESTAMPADD(MINUTE, TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', ` + col + `) DIV 15 * 15, '1970-01-01 00:00:00'), '%Y-%m-%d %H:%i')`
}

func readExpDaily(t *testing.T, db *sql.DB, q string) map[string]expDailyRow {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]expDailyRow{}
	for rows.Next() {
		var key string
		var r expDailyRow
		require.NoError(t, rows.Scan(&key, &r.ExposedUsers, &r.Exposures, &r.ClickedUsers, &r.Clicks, &r.Closes))
		out[key] = r
	}
	require.NoError(t, rows.Err())
	return out
}

func TestExperimentRollupCountsEachAcceptedEventOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	events := make([]event.Event, 400)
	for i := range events {
		events[i] = expEventAt(i)
	}
	plain := event.Event{ID: "p1", UID: "u1", PopupID: 3, Action: event.Impression, At: t0, Impressions: 1, DayCount: 2}

	require.NoError(t, w.WriteBatch(ctx, append(events[:200:200], plain)), "every user's first exposures")
	require.NoError(t, w.WriteBatch(ctx, events[:200]), "a batch redelivered after a crash")
	require.NoError(t, w.WriteBatch(ctx, append([]event.Event{events[210], events[211], events[212]}, events[150:300]...)),
		"overlapping, with repeats inside the batch")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for worker := range 2 {
		wg.Go(func() {
			for round := range 4 {
				errs <- w.WriteBatch(ctx, events[250+(worker*37+round*53)%100:])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, readLog(t, db), 401, "every event once in the log")

	// Per user: the arm, and the counts of the log's events (every user was exposed before any
	// click or close, and first in the first batch).
	want := map[string]expUserRow{}
	for _, e := range events {
		k := fmt.Sprintf("%d/%s/%s", e.PopupID, expSalt(e.PopupID), e.UID)
		r := want[k]
		r.Arm = e.Arms[0].Arm
		switch e.Action {
		case event.Impression, event.Exposure:
			r.Exposures++
			if r.FirstExposed.IsZero() {
				r.FirstExposed = e.At
			}
		case event.Click:
			r.Clicks++
			r.Clicked = true
		case event.Close:
			r.Closes++
		}
		want[k] = r
	}
	got := readExpUsers(t, db)
	assert.Len(t, got, 2*expUsers)
	assert.Equal(t, want, got)

	// Per arm: the days sum to the users' totals, and the day of each user's first exposure and
	// first click counts the user.
	byArm := `SELECT CONCAT(popup_id, '/', salt, '/', arm), %s FROM %s GROUP BY popup_id, salt, arm`
	days := readExpDaily(t, db, fmt.Sprintf(byArm, "SUM(exposed_users), SUM(exposures), SUM(clicked_users), SUM(clicks), SUM(closes)", "popup_experiment_slot"))
	users := readExpDaily(t, db, fmt.Sprintf(byArm, "COUNT(*), SUM(exposures), SUM(first_click_at IS NOT NULL), SUM(clicks), SUM(closes)", "popup_experiment_user"))
	assert.Len(t, days, 5, "popup 1's three arms, popup 2's two")
	assert.Equal(t, users, days)
	byDay := `SELECT CONCAT(popup_id, '/', arm, '/', %s), %s FROM %s GROUP BY 1`
	firstDays := readExpDaily(t, db, fmt.Sprintf(byDay, quarterHour("first_exposed_at"), "COUNT(*), 0, 0, 0, 0", "popup_experiment_user"))
	for k, r := range readExpDaily(t, db, fmt.Sprintf(byDay, quarterHour("slot_start"), "SUM(exposed_users), 0, 0, 0, 0", "popup_experiment_slot")) {
		if r.ExposedUsers == 0 {
			delete(firstDays, k) // a day with events but no first exposure
			continue
		}
		assert.Equal(t, firstDays[k], r, k)
		delete(firstDays, k)
	}
	assert.Empty(t, firstDays)
	clickDays := readExpDaily(t, db, fmt.Sprintf(byDay, quarterHour("first_click_at"), "0, 0, COUNT(*), 0, 0", "popup_experiment_user WHERE first_click_at IS NOT NULL"))
	dailyClicked := readExpDaily(t, db, fmt.Sprintf(byDay, quarterHour("slot_start"), "0, 0, SUM(clicked_users), 0, 0", "popup_experiment_slot WHERE clicked_users > 0"))
	assert.NotEmpty(t, clickDays)
	assert.Equal(t, clickDays, dailyClicked)

	// Exposures are in the log and the state, not in the impression counters.
	log := logCounts(t, db)
	var exposures int64
	for k, n := range log {
		if k.Action == string(event.Exposure) {
			exposures += n
			delete(log, k)
		}
	}
	assert.Positive(t, exposures)
	assert.Equal(t, log, statsCounts(t, db), "popup_daily_stats: impressions, clicks and closes only")
	var slotImpressions, logImpressions int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT SUM(impressions) FROM popup_slot_stats`).Scan(&slotImpressions))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE action = 'impression'`).Scan(&logImpressions))
	assert.Equal(t, logImpressions, slotImpressions, "popup_slot_stats: no exposures")
}

func TestExperimentRollupCountsClicksOnlyOfExposedUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	day1 := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	day2 := day1.Add(2 * time.Hour)
	arm := func(arm string) []event.ArmRef { return []event.ArmRef{{PopupID: 1, Salt: "s", Arm: arm}} }
	ev := func(id string, a event.Action, at time.Time, arms ...event.ArmRef) event.Event {
		return event.Event{ID: id, UID: "u1", PopupID: 1, Action: a, At: at, NextShowAt: at.Add(time.Hour), Impressions: 1, Arms: arms}
	}

	require.NoError(t, w.WriteBatch(ctx, []event.Event{ev("c0", event.Click, day1, arm("b")...), ev("x0", event.Close, day1, arm("b")...)}),
		"a click and a close before any exposure")
	assert.Empty(t, readExpUsers(t, db), "count nothing")
	require.NoError(t, w.WriteBatch(ctx, []event.Event{ev("i1", event.Impression, day1, arm("b")...)}))
	require.NoError(t, w.WriteBatch(ctx, []event.Event{ev("c1", event.Click, day2, arm("b")...), ev("c2", event.Click, day2.Add(time.Second), arm("b")...)}))
	require.NoError(t, w.WriteBatch(ctx, []event.Event{ev("c3", event.Click, day2.Add(time.Minute), arm("b")...)}))
	// A click on popup 2, which u1 got because popup 1's control fell through, counts for that
	// control too; u1 has no row in that phase... until exposed.
	fall := ev("c4", event.Click, day2.Add(time.Hour), event.ArmRef{PopupID: 1, Salt: "t", Arm: "control"})
	fall.PopupID = 2
	exposure := ev("e5", event.Exposure, day2.Add(time.Hour), event.ArmRef{PopupID: 1, Salt: "t", Arm: "control"})
	exposure.Impressions, exposure.DayCount = 2, 5 // a day count an exposure must not write
	require.NoError(t, w.WriteBatch(ctx, []event.Event{exposure, fall}))

	got := readExpUsers(t, db)
	assert.Equal(t, expUserRow{Arm: "b", FirstExposed: day1, Exposures: 1, Clicks: 3, Clicked: true}, got["1/s/u1"])
	assert.Equal(t, expUserRow{Arm: "control", FirstExposed: day2.Add(time.Hour), Exposures: 1, Clicks: 1, Clicked: true}, got["1/t/u1"])
	slots := readExpDaily(t, db, `SELECT CONCAT(salt, '/', arm, '/', `+quarterHour("slot_start")+`), exposed_users, exposures, clicked_users, clicks, closes FROM popup_experiment_slot`)
	assert.Equal(t, map[string]expDailyRow{
		"s/b/2026-03-01 23:00":       {ExposedUsers: 1, Exposures: 1},
		"s/b/2026-03-02 01:00":       {ClickedUsers: 1, Clicks: 3},
		"t/control/2026-03-02 02:00": {ExposedUsers: 1, Exposures: 1, ClickedUsers: 1, Clicks: 1},
	}, slots, "the first click counted once, in its quarter hour")

	// The exposure advanced the state like an impression but not the day's impression count.
	var impressions, dayImpressions int
	var lastImpression time.Time
	require.NoError(t, db.QueryRowContext(ctx, `SELECT impressions, day_impressions, last_impression_at FROM popup_user_state WHERE uid = 'u1' AND popup_id = 1`).
		Scan(&impressions, &dayImpressions, &lastImpression))
	assert.Equal(t, 2, impressions)
	assert.Equal(t, exposure.At, lastImpression)
	assert.Zero(t, dayImpressions, "the daily cap does not count an exposure")
}

func TestMigration10KeepsDataAndTakesExposures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 8)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES
		('e1', 'u1', 7, 'impression', '2026-03-01 10:00:00'), ('e2', 'u1', 7, 'click', '2026-03-01 10:00:01')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_daily_stats (popup_id, day, impressions, clicks) VALUES (7, '2026-03-01', 1, 1)`)
	require.NoError(t, err)

	applied, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	assert.Contains(t, applied, int64(10))
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))
	assert.Equal(t, logCounts(t, db), statsCounts(t, db), "the log and its counts are kept")

	require.NoError(t, mysqlstore.NewEventWriter(db).WriteBatch(ctx, []event.Event{{ID: "e3", UID: "u2", PopupID: 7, Action: event.Exposure,
		At: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), Impressions: 1, Arms: []event.ArmRef{{PopupID: 7, Salt: "s", Arm: "control"}}}}))
	assert.Equal(t, "u2/7/exposure/2026-03-01T11:00:00Z/", readLog(t, db)["e3"])
	assert.Len(t, readExpUsers(t, db), 1)
}

func TestExperimentRollupOfManyConcurrentWritersStaysConsistent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	events := make([]event.Event, 600)
	for i := range events {
		events[i] = expEventAt(i)
	}
	// Eight writers of shuffled, overlapping batches: users first exposed by several writers at
	// once, clicks racing exposures. Deadlocks are retried; every count stays whole.
	writeConcurrently(t, w, events, 23, 6, 200)
	require.NoError(t, w.WriteBatch(ctx, events))

	byArm := `SELECT CONCAT(popup_id, '/', salt, '/', arm), %s FROM %s GROUP BY popup_id, salt, arm`
	days := readExpDaily(t, db, fmt.Sprintf(byArm, "SUM(exposed_users), SUM(exposures), SUM(clicked_users), SUM(clicks), SUM(closes)", "popup_experiment_slot"))
	users := readExpDaily(t, db, fmt.Sprintf(byArm, "COUNT(*), SUM(exposures), SUM(first_click_at IS NOT NULL), SUM(clicks), SUM(closes)", "popup_experiment_user"))
	assert.Equal(t, users, days, "the quarter hours sum to the users' rows")
	for k, r := range readExpUsers(t, db) {
		var p int64
		var salt, uid string
		_, err := fmt.Sscanf(strings.ReplaceAll(k, "/", " "), "%d %s %s", &p, &salt, &uid)
		require.NoError(t, err)
		var exposures int64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE popup_id = ? AND uid = ?
			AND action IN ('impression', 'exposure')`, p, uid).Scan(&exposures))
		assert.Equal(t, exposures, r.Exposures, "%s: every exposure once", k)
		assert.Equal(t, expArm(p, int(mustAtoi(t, strings.TrimPrefix(uid, "u")))), r.Arm, k)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// explain is the first row of EXPLAIN q, by column.
func explain(t *testing.T, db *sql.DB, q string) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN "+q)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.True(t, rows.Next())
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	plan := map[string]string{}
	for i, c := range cols {
		plan[c] = vals[i].String
	}
	return plan
}

func TestExperimentRollupQueriesUseThePrimaryKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	events := make([]event.Event, 400)
	for i := range events {
		events[i] = expEventAt(i)
	}
	require.NoError(t, mysqlstore.NewEventWriter(db).WriteBatch(ctx, events))
	_, err := db.ExecContext(ctx, "ANALYZE TABLE popup_experiment_user, popup_experiment_daily, popup_experiment_slot")
	require.NoError(t, err)
	// A batch of 500 names up to 1,000 users (two arms an event).
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("(%d,'salt-%d','u%d')", 1+i%2, 1+i%2, i)
	}
	tests := []struct{ name, query string }{
		// The worker's locking read must lock the named rows only, not a scan's every row.
		{"the batch's users, locked", `SELECT popup_id, salt, uid, arm, batch_id = 5, first_click_at IS NULL FROM popup_experiment_user
			FORCE INDEX (PRIMARY) WHERE (popup_id, salt, uid) IN (` + strings.Join(keys, ",") + `) FOR UPDATE`},
		{"a phase's UTC days from before quarter hours", `SELECT DATE_FORMAT(day, '%Y-%m-%d'), arm, exposed_users, exposures, clicked_users, clicks, closes
			FROM popup_experiment_daily WHERE popup_id = 1 AND salt = 'salt-1'`},
		{"a phase's quarter hours summed into days", `SELECT INTERVAL(TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', slot_start), 29500000, 29501440) AS d, arm,
			SUM(exposed_users), SUM(exposures), SUM(clicked_users), SUM(clicks), SUM(closes)
			FROM popup_experiment_slot WHERE popup_id = 1 AND salt = 'salt-1' GROUP BY d, arm`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := explain(t, db, tt.query)
			assert.Equal(t, "PRIMARY", plan["key"], "plan: %v", plan)
			assert.NotEqual(t, "ALL", plan["type"], "no table scan: %v", plan)
		})
	}
}
