package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/report"
	"popupsvc/internal/testenv"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func date(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	require.NoError(t, err)
	return d
}

// zoneQuery is the days from..to of loc, with the whole log kept.
func zoneQuery(t *testing.T, from, to string, loc *time.Location) report.StatsQuery {
	t.Helper()
	return report.StatsQuery{Bounds: report.DayBounds(date(t, from), date(t, to), loc), UTC: loc == time.UTC, Uniques: true}
}

// impressionAt is an impression of popup 1 by uid at a UTC time.
func impressionAt(id, uid, at string) event.Event {
	ts, err := time.Parse(time.RFC3339, at)
	if err != nil {
		panic(err)
	}
	return event.Event{ID: id, UID: uid, PopupID: 1, Action: event.Impression, At: ts, NextShowAt: ts.Add(time.Hour), Impressions: 1}
}

func newStatsDB(t *testing.T) *sql.DB {
	t.Helper()
	db := testenv.MySQL(t)
	_, err := db.ExecContext(context.Background(), `INSERT INTO popup_config (id, name, targeting, content) VALUES (1, 'a', '{}', '{}')`)
	require.NoError(t, err)
	return db
}

// dayImpressions is date → impressions of the answer's days.
func dayImpressions(s report.Stats) map[string]int64 {
	out := map[string]int64{}
	for _, d := range s.Days {
		out[d.Day.Format(time.DateOnly)] = d.Impressions
	}
	return out
}

func TestResultsByTheDaysOfATimeZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newStatsDB(t)
	w := mysqlstore.NewEventWriter(db)
	require.NoError(t, w.WriteBatch(ctx, []event.Event{
		// one UTC day (12-01), two Los Angeles days: 11-30 23:30 PST and 12-01 00:30 PST
		impressionAt("la1", "u1", "2026-12-01T07:30:00Z"),
		impressionAt("la2", "u2", "2026-12-01T08:30:00Z"),
		// Kathmandu is +05:45: 23:55 on 11-30 and 00:05 on 12-01 there, one UTC day (11-30)
		impressionAt("np1", "u3", "2026-11-30T18:10:00Z"),
		impressionAt("np2", "u4", "2026-11-30T18:20:00Z"),
		// Los Angeles falls back on 2026-11-01, a 25-hour day: 00:30 PDT and 23:30 PST are both
		// that day, the next instant after it is 11-02
		impressionAt("dst1", "u5", "2026-11-01T07:30:00Z"),
		impressionAt("dst2", "u6", "2026-11-02T07:30:00Z"),
		impressionAt("dst3", "u7", "2026-11-02T08:00:00Z"),
		// and springs forward on 2026-03-08, a 23-hour day from 08:00Z to 07:00Z the next day
		impressionAt("spr1", "u8", "2026-03-08T08:00:00Z"),
		impressionAt("spr2", "u9", "2026-03-09T06:59:00Z"),
		impressionAt("spr3", "u10", "2026-03-09T07:00:00Z"),
	}))
	repo := mysqlstore.NewStatsRepo(db)
	la, np := mustZone(t, "America/Los_Angeles"), mustZone(t, "Asia/Kathmandu")
	tests := []struct {
		name     string
		from, to string
		loc      *time.Location
		want     map[string]int64
	}{
		{"UTC", "2026-11-30", "2026-12-01", time.UTC, map[string]int64{"2026-11-30": 2, "2026-12-01": 2}},
		{"Los Angeles day boundary", "2026-11-30", "2026-12-01", la, map[string]int64{"2026-11-30": 1 + 2, "2026-12-01": 1}},
		{"Kathmandu, +05:45", "2026-11-30", "2026-12-01", np, map[string]int64{"2026-11-30": 1, "2026-12-01": 1 + 2}},
		{"a 25-hour day", "2026-11-01", "2026-11-02", la, map[string]int64{"2026-11-01": 2, "2026-11-02": 1}},
		{"a 23-hour day", "2026-03-08", "2026-03-09", la, map[string]int64{"2026-03-08": 2, "2026-03-09": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := repo.PopupStats(ctx, 1, zoneQuery(t, tt.from, tt.to, tt.loc))
			require.NoError(t, err)
			assert.Equal(t, tt.want, dayImpressions(s))
			for _, d := range s.Days {
				assert.True(t, d.Complete, d.Day)
				require.NotNil(t, d.Users, d.Day)
				assert.Equal(t, d.Impressions, *d.Users, "one impression per user here: %s", d.Day)
			}
			all, err := repo.AllStats(ctx, zoneQuery(t, tt.from, tt.to, tt.loc))
			require.NoError(t, err)
			require.Len(t, all, 1)
			assert.Equal(t, tt.want, dayImpressions(all[0]), "the all-popups list counts the same days")
		})
	}
}

func TestClicksPerButtonAndUniquesAreExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newStatsDB(t)
	w := mysqlstore.NewEventWriter(db)
	base := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	var events []event.Event
	for i := range 400 {
		at := base.Add(time.Duration(i) * 7 * time.Minute) // about 2 days
		e := event.Event{ID: fmt.Sprintf("e%d", i), UID: fmt.Sprintf("u%d", i%37), PopupID: 1, At: at, NextShowAt: at}
		switch i % 5 {
		case 0, 1:
			e.Action = event.Impression
		case 2:
			e.Action, e.Button = event.Click, event.ButtonAt(i%3) // buttons 0, 1, 2
		case 3:
			e.Action = event.Click // unspecified
		case 4:
			e.Action = event.Close
		}
		events = append(events, e)
	}
	for i := 0; i < len(events); i += 100 {
		require.NoError(t, w.WriteBatch(ctx, events[i:i+100]))
	}
	// A batch written again (committed, acknowledgement lost), and one half new: nothing counts twice.
	require.NoError(t, w.WriteBatch(ctx, events[100:200]))
	require.NoError(t, w.WriteBatch(ctx, events[150:250]))

	repo := mysqlstore.NewStatsRepo(db)
	for _, zone := range []string{"UTC", "America/Los_Angeles", "Asia/Kathmandu"} {
		t.Run(zone, func(t *testing.T) {
			loc := mustZone(t, zone)
			q := zoneQuery(t, "2026-11-30", "2026-12-04", loc)
			s, err := repo.PopupStats(ctx, 1, q)
			require.NoError(t, err)
			var imp, clk, cls, unspecified int64
			buttons := map[int]int64{}
			for i, d := range s.Days {
				imp += d.Impressions
				clk += d.Clicks
				cls += d.Closes
				unspecified += d.Unspecified()
				for b, n := range d.Buttons {
					buttons[b] += n
				}
				// uniques of the day, counted independently
				var want int64
				require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT uid) FROM popup_action_log IGNORE INDEX (idx_popup_action_log_popup_action_time_uid)
					WHERE popup_id = 1 AND action = 'impression' AND event_at >= ? AND event_at < ?`, q.Bounds[i].UTC(), q.Bounds[i+1].UTC()).Scan(&want))
				require.NotNil(t, d.Users)
				assert.Equal(t, want, *d.Users, d.Day)
			}
			assert.Equal(t, int64(160), imp)
			assert.Equal(t, int64(160), clk)
			assert.Equal(t, int64(80), cls)
			assert.Equal(t, int64(80), unspecified)
			var want [3]int64
			for i := range events {
				if b, ok := events[i].Button.Index(); ok {
					want[b]++
				}
			}
			assert.Equal(t, map[int]int64{0: want[0], 1: want[1], 2: want[2]}, buttons)
			var users int64
			require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT uid) FROM popup_action_log WHERE action = 'impression'`).Scan(&users))
			require.NotNil(t, s.Users)
			assert.Equal(t, users, *s.Users)
		})
	}
	// The log holds each click's button.
	var logged int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE button >= 0`).Scan(&logged))
	assert.Equal(t, int64(80), logged)
}

func TestUniquesOnlyForTheDaysTheLogKeeps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newStatsDB(t)
	require.NoError(t, mysqlstore.NewEventWriter(db).WriteBatch(ctx, []event.Event{
		impressionAt("a", "u1", "2026-12-01T10:00:00Z"), impressionAt("b", "u1", "2026-12-02T10:00:00Z"),
	}))
	q := zoneQuery(t, "2026-12-01", "2026-12-02", time.UTC)
	q.LogKeptSince = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) // the log lost the start of 12-01
	s, err := mysqlstore.NewStatsRepo(db).PopupStats(ctx, 1, q)
	require.NoError(t, err)
	assert.Nil(t, s.Days[0].Users, "a day the log does not keep whole has no uniques")
	require.NotNil(t, s.Days[1].Users)
	assert.Equal(t, int64(1), *s.Days[1].Users)
	assert.Nil(t, s.Users, "nor has a range reaching before the log")
	assert.Equal(t, int64(1), s.Days[0].Impressions, "counts come from the counters, kept forever")
}

func TestMigration8UpgradesADatabaseHoldingData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 5)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_config (id, name, targeting, content) VALUES (7, 'a', '{}', '{}')`)
	require.NoError(t, err)
	// Written by the previous release: the log and the daily counters. 2026-11-30 has lost its
	// morning to the retention purge (the daily row says 3 impressions, the log keeps 1).
	_, err = db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at, batch_id) VALUES
		('e1', 'u1', 7, 'impression', '2026-11-30 20:00:00', 1),
		('e2', 'u1', 7, 'impression', '2026-12-01 07:30:00', 1), ('e3', 'u2', 7, 'click', '2026-12-01 07:44:59.999', 1),
		('e4', 'u2', 7, 'impression', '2026-12-01 08:30:00', 1), ('e5', 'u3', 7, 'close', '2026-12-01 23:59:59.999', 1)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_daily_stats (popup_id, day, impressions, clicks, closes) VALUES
		(7, '2026-11-30', 3, 0, 0), (7, '2026-12-01', 2, 1, 1)`)
	require.NoError(t, err)

	_, err = mysqlstore.Migrate(ctx, db) // to 8 and every later version
	require.NoError(t, err)
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))
	var slots, buttons int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(button <> -1) FROM popup_slot_stats`).Scan(&slots, &buttons))
	assert.Equal(t, int64(4), slots, "one row per popup and quarter hour with events")
	assert.Zero(t, buttons, "clicks before buttons existed are unspecified")
	var slotStart string
	var clk int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT DATE_FORMAT(slot_start, '%Y-%m-%d %H:%i:%s'), clicks FROM popup_slot_stats WHERE clicks > 0`).Scan(&slotStart, &clk))
	assert.Equal(t, "2026-12-01 07:30:00", slotStart)
	assert.Equal(t, int64(1), clk)

	repo := mysqlstore.NewStatsRepo(db)
	s, err := repo.PopupStats(ctx, 7, zoneQuery(t, "2026-11-30", "2026-12-01", time.UTC))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"2026-11-30": 3, "2026-12-01": 2}, dayImpressions(s), "UTC days: the daily counters, untouched")
	assert.True(t, s.Days[0].Complete)
	assert.Equal(t, int64(1), s.Days[1].Unspecified())

	la := mustZone(t, "America/Los_Angeles")
	s, err = repo.PopupStats(ctx, 7, zoneQuery(t, "2026-11-30", "2026-12-01", la))
	require.NoError(t, err)
	// LA 11-30 is 11-30 08:00Z..12-01 08:00Z: it overlaps UTC 11-30, short in the slots.
	assert.Equal(t, map[string]int64{"2026-11-30": 2, "2026-12-01": 1}, dayImpressions(s))
	assert.False(t, s.Days[0].Complete, "LA 11-30 overlaps UTC 11-30, which the log no longer keeps whole")
	assert.True(t, s.Days[1].Complete, "LA 12-01 is UTC 12-01 08:00 to 12-02 08:00, all kept")

	// The worker's next batch counts into both tables.
	w := mysqlstore.NewEventWriter(db)
	require.NoError(t, w.WriteBatch(ctx, []event.Event{{ID: "e6", UID: "u4", PopupID: 7, Action: event.Click, Button: event.ButtonAt(0),
		At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}}))
	s, err = repo.PopupStats(ctx, 7, zoneQuery(t, "2026-12-01", "2026-12-01", la))
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Days[0].Clicks, "e3 (07:44:59Z) was LA's 11-30")
	assert.Equal(t, map[int]int64{0: 1}, s.Days[0].Buttons)
	assert.True(t, s.Days[0].Complete)
}
