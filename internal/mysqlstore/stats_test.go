package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/report"
	"popupsvc/internal/testenv"
)

// dayKey is one (popup, UTC day, action) count.
type dayKey struct {
	PopupID int64
	Day     string
	Action  string
}

// logCounts counts the action log directly: what the daily stats must equal.
func logCounts(t *testing.T, db *sql.DB) map[dayKey]int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT popup_id, DATE_FORMAT(event_at, '%Y-%m-%d'), action, COUNT(*)
		FROM popup_action_log GROUP BY popup_id, DATE(event_at), action`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[dayKey]int64{}
	for rows.Next() {
		var k dayKey
		var n int64
		require.NoError(t, rows.Scan(&k.PopupID, &k.Day, &k.Action, &n))
		out[k] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// statsCounts reads popup_daily_stats as the same (popup, day, action) counts (zeros left out).
func statsCounts(t *testing.T, db *sql.DB) map[dayKey]int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT popup_id, DATE_FORMAT(day, '%Y-%m-%d'), impressions, clicks, closes FROM popup_daily_stats`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[dayKey]int64{}
	for rows.Next() {
		var id, imp, clk, cls int64
		var day string
		require.NoError(t, rows.Scan(&id, &day, &imp, &clk, &cls))
		for action, n := range map[string]int64{"impression": imp, "click": clk, "close": cls} {
			if n > 0 {
				out[dayKey{id, day, action}] = n
			}
		}
	}
	require.NoError(t, rows.Err())
	return out
}

// spreadEvent is event i of a set spread over 3 popups, 5 UTC days and the three actions.
func spreadEvent(i int) event.Event {
	actions := []event.Action{event.Impression, event.Impression, event.Click, event.Close}
	at := t0.Add(time.Duration(i%5)*24*time.Hour + time.Duration(i%7)*time.Hour - 11*time.Hour)
	e := event.Event{ID: fmt.Sprintf("e%d", i), UID: fmt.Sprintf("u%d", i%41), PopupID: int64(1 + i%3),
		Action: actions[i%len(actions)], At: at, NextShowAt: at.Add(time.Hour)}
	if e.Action == event.Impression {
		e.Impressions = 1 + i%4
		e.Locale = []string{"default", "pt-BR", "de"}[i%3]
	}
	return e
}

func TestDailyStatsCountEachAcceptedEventOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	events := make([]event.Event, 600)
	for i := range events {
		events[i] = spreadEvent(i)
	}

	require.NoError(t, w.WriteBatch(ctx, events[:300]))
	require.NoError(t, w.WriteBatch(ctx, events[:300]), "a batch redelivered after a crash")
	withDup := append([]event.Event{events[10], events[250]}, events[200:400]...)
	require.NoError(t, w.WriteBatch(ctx, withDup), "overlapping, with repeats inside the batch")
	require.NoError(t, w.WriteBatch(ctx, []event.Event{spreadEvent(700), spreadEvent(700), spreadEvent(701)}), "new, one of them twice")
	late := spreadEvent(702)
	late.At = late.At.Add(999_999 * time.Nanosecond) // finer than the log keeps: counted from the log
	require.NoError(t, w.WriteBatch(ctx, []event.Event{late}))
	// Two writers at once, each writing overlapping batches of the rest several times.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for worker := range 2 {
		wg.Go(func() {
			for round := range 4 {
				lo := 350 + (worker*37+round*53)%100
				errs <- w.WriteBatch(ctx, events[lo:600])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	want := logCounts(t, db)
	require.Len(t, readLog(t, db), 603, "every event once in the log")
	assert.Len(t, want, 3*5*3, "the events cover 3 popups × 5 days × 3 actions")
	assert.Equal(t, want, statsCounts(t, db), "daily stats equal the log's counts")
}

func TestStatsRepoReadsTheRollupAndReach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_config (id, name, targeting, content) VALUES (1, 'a', '{}', '{}'), (2, 'b', '{}', '{}'), (3, 'c', '{}', '{}')`)
	require.NoError(t, err)
	w := mysqlstore.NewEventWriter(db)
	events := make([]event.Event, 300)
	for i := range events {
		events[i] = spreadEvent(i)
	}
	require.NoError(t, w.WriteBatch(ctx, events))
	repo := mysqlstore.NewStatsRepo(db)

	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	utcDays := func(from, to time.Time) report.StatsQuery {
		return report.StatsQuery{Bounds: report.DayBounds(from, to, time.UTC), UTC: true}
	}
	s, err := repo.PopupStats(ctx, 2, utcDays(day(1), day(3)))
	require.NoError(t, err)
	var wantDays []string
	var got []string
	for k := range logCounts(t, db) {
		if k.PopupID == 2 && k.Day >= "2026-03-01" && k.Day <= "2026-03-03" && k.Action == "impression" {
			wantDays = append(wantDays, k.Day)
		}
	}
	for _, d := range s.Days {
		if d.Impressions > 0 {
			got = append(got, d.Day.Format(time.DateOnly))
		}
	}
	assert.ElementsMatch(t, wantDays, got)
	var reached int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT uid) FROM popup_action_log WHERE popup_id = 2 AND action = 'impression'`).Scan(&reached))
	assert.Equal(t, reached, s.UsersReached)

	_, err = repo.PopupStats(ctx, 99, utcDays(day(1), day(3)))
	assert.ErrorContains(t, err, "not found")

	all, err := repo.AllStats(ctx, utcDays(day(1), day(10)))
	require.NoError(t, err)
	require.Len(t, all, 3)
	assert.Equal(t, []int64{1, 2, 3}, []int64{all[0].PopupID, all[1].PopupID, all[2].PopupID})
}

func TestStatsQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	events := make([]event.Event, 3000)
	for i := range events {
		events[i] = spreadEvent(i)
	}
	w := mysqlstore.NewEventWriter(db)
	for i := 0; i < len(events); i += 500 {
		require.NoError(t, w.WriteBatch(ctx, events[i:i+500]))
	}
	_, err := db.ExecContext(ctx, "ANALYZE TABLE popup_action_log, popup_user_state, popup_daily_stats, popup_slot_stats, popup_locale_slot_stats")
	require.NoError(t, err)
	tests := []struct {
		name, query, wantKey string
	}{
		{"one popup's days", "SELECT popup_id, day, impressions, clicks, closes FROM popup_daily_stats WHERE popup_id = 7 AND day BETWEEN '2026-01-01' AND '2026-01-14' ORDER BY day", "PRIMARY"},
		{"users reached", "SELECT popup_id, COUNT(*) FROM popup_user_state WHERE popup_id IN (7) AND impressions > 0 GROUP BY popup_id", "idx_popup_user_state_popup_impressions"},
		{"a batch's new rows", `SELECT uid, event_id, event_at FROM popup_action_log
			WHERE batch_id = 5 AND (uid, event_id) IN (('u1','e1'),('u2','e2'),('u3','e3'))`, "uk_popup_action_log_uid_event"},
		{"one popup's quarter hours", `SELECT popup_id, INTERVAL(TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', slot_start), 29640000, 29641440) AS d, button,
			SUM(impressions), SUM(clicks), SUM(closes) FROM popup_slot_stats WHERE popup_id = 2 AND slot_start >= '2026-03-01' AND slot_start < '2026-03-02'
			GROUP BY popup_id, d, button`, "PRIMARY"},
		{"every popup's quarter hours", `SELECT popup_id, SUM(impressions) FROM popup_slot_stats
			WHERE slot_start >= '2026-03-01 08:00' AND slot_start < '2026-03-01 09:00' GROUP BY popup_id`, "idx_popup_slot_stats_slot"},
		{"unique users of a day", `SELECT COUNT(DISTINCT uid) FROM popup_action_log
			WHERE popup_id = 2 AND action = 'impression' AND event_at >= '2026-03-01 08:00' AND event_at < '2026-03-02 08:00'`, "idx_popup_action_log_popup_action_time_uid"},
		{"unique users per locale", `SELECT locale, COUNT(DISTINCT uid) FROM popup_action_log
			WHERE popup_id = 2 AND action = 'impression' AND event_at >= '2026-03-01 08:00' AND event_at < '2026-03-02 08:00' AND locale <> '' GROUP BY locale`,
			"idx_popup_action_log_popup_action_time_uid"},
		{"the impressions clicks answer", `SELECT uid, event_id, popup_id, locale FROM popup_action_log
			WHERE action = 'impression' AND locale <> '' AND (uid, event_id) IN (('u1','e1'),('u2','e2'),('u3','e3'))`, "uk_popup_action_log_uid_event"},
		{"one popup's locales", `SELECT locale, SUM(impressions), SUM(clicks) FROM popup_locale_slot_stats
			WHERE popup_id = 2 AND slot_start >= '2026-03-01' AND slot_start < '2026-03-02' GROUP BY locale`, "PRIMARY"},
		{"purge: each popup's oldest row", "SELECT popup_id, MIN(event_at) FROM popup_action_log GROUP BY popup_id", "idx_popup_action_log_popup_time"},
		{"purge one popup", "DELETE FROM popup_action_log WHERE popup_id = 7 AND event_at < '2026-01-01' ORDER BY event_at LIMIT 1000", "idx_popup_action_log_popup_time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := explain(t, db, tt.query)
			t.Logf("plan: %v", plan)
			assert.Equal(t, tt.wantKey, plan["key"], "plan: %v", plan)
			assert.NotEqual(t, "ALL", plan["type"], "no table scan: %v", plan)
		})
	}
}

func TestMigration3UpgradesAVersion2DatabaseHoldingData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 2)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES
		('e1', 'u1', 7, 'impression', '2026-03-01 10:00:00'), ('e2', 'u1', 7, 'click', '2026-03-01 10:00:01'),
		('e3', 'u2', 7, 'impression', '2026-03-02 23:59:59.999'), ('e4', 'u2', 8, 'close', '2026-03-02 00:00:00')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_user_state (uid, popup_id, impressions) VALUES ('u1', 7, 1), ('u2', 7, 1), ('u2', 8, 0)`)
	require.NoError(t, err)

	applied, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	require.NotEmpty(t, applied)
	assert.Equal(t, int64(3), applied[0], "version 3 first, then the later ones")
	again, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, again, "migrating twice is a no-op")
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))

	assert.Equal(t, logCounts(t, db), statsCounts(t, db), "the existing log is rolled up")
	// New events count on top; a replay of an old one does not.
	w := mysqlstore.NewEventWriter(db)
	require.NoError(t, w.WriteBatch(ctx, []event.Event{
		{ID: "e1", UID: "u1", PopupID: 7, Action: event.Impression, At: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{ID: "e5", UID: "u3", PopupID: 7, Action: event.Impression, At: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), Impressions: 1},
	}))
	got := statsCounts(t, db)
	assert.Equal(t, logCounts(t, db), got)
	assert.Equal(t, int64(2), got[dayKey{7, "2026-03-01", "impression"}])

	s, err := mysqlstore.NewStatsRepo(db).AllStats(ctx, report.StatsQuery{
		Bounds: report.DayBounds(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), time.UTC), UTC: true})
	require.NoError(t, err)
	require.Len(t, s, 2)
	assert.Equal(t, int64(3), s[0].UsersReached, "popup 7: u1, u2, u3")
	assert.Zero(t, s[1].UsersReached, "popup 8: u2's state shows no impression")
}
