package drain_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/report"
)

// TestResultsPerLocaleThroughTheDrain queues impressions in two locales and clicks that name
// their impressions, drained by a worker whose every batch is written twice (the acknowledgement
// lost), the second phase's clicks after their impressions were committed: each event counts
// once, a click counts under its impression's locale (found in its own batch or in the log), a
// click naming no impression of the same user and popup counts under none, and users are
// distinct per locale.
func TestResultsPerLocaleThroughTheDrain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2*time.Second)
	ctx := context.Background()
	_, err := e.db.ExecContext(ctx, `INSERT INTO popup_config (id, name, targeting, content) VALUES (1, 'a', '{}', '{}'), (2, 'b', '{}', '{}')`)
	require.NoError(t, err)
	var calls atomic.Int64
	twice := sinkFunc(func(ctx context.Context, events []event.Event) error {
		if err := e.writer.WriteBatch(ctx, events); err != nil {
			return err
		}
		if calls.Add(1)%2 == 1 {
			return errors.New("acknowledgement lost")
		}
		return nil
	})
	r := e.start(twice, e.config("w1"))
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	imp := func(id, uid string, popupID int64, locale string, min int) event.Event {
		return event.Event{ID: id, UID: uid, PopupID: popupID, Action: event.Impression, At: at(min), DecisionID: id,
			NextShowAt: at(min + 60), Impressions: 1, Locale: locale}
	}
	act := func(id, uid string, popupID int64, a event.Action, decision string, min int) event.Event {
		return event.Event{ID: id, UID: uid, PopupID: popupID, Action: a, At: at(min), DecisionID: decision, NextShowAt: at(min + 60)}
	}
	queue := func(evs ...event.Event) {
		for _, ev := range evs {
			require.NoError(t, e.rdb.RPush(ctx, e.keys.Queue(e.keys.Shard(ev.UID)), event.Append(nil, &ev)).Err())
		}
	}
	queue(
		imp("d1", "u1", 1, "pt-BR", 0),
		act("c1", "u1", 1, event.Click, "d1", 1), // its impression in the same batch
		imp("d2", "u1", 1, "default", 2),         // the same user in a second locale
		imp("d3", "u2", 1, "pt-BR", 3),
		imp("d4", "u3", 1, "", 4), // queued by a popup-api from before locales: none known
		imp("d5", "u4", 2, "pt-BR", 5),
	)
	e.waitLog(6, 30*time.Second)
	queue(
		act("c2", "u2", 1, event.Click, "d3", 10), // its impression in the log, from an earlier batch
		act("c3", "u1", 1, event.Close, "d1", 11), // closes have no locale
		act("c4", "u3", 1, event.Click, "", 12),   // no decision: none
		act("c5", "u2", 1, event.Click, "d1", 13), // another user's decision: none
		act("c6", "u4", 1, event.Click, "d5", 14), // the decision of another popup: none
		act("c7", "u3", 1, event.Click, "d4", 15), // its impression has no locale: none
		act("c8", "u1", 1, event.Click, "d2", 16), // the default locale
		act("c9", "u2", 1, event.Click, "d3", 17), // a second click on one impression counts again
	)
	e.waitLog(14, 30*time.Second)
	r.stop(t)
	require.GreaterOrEqual(t, calls.Load(), int64(2), "batches were written twice")

	rows, err := e.db.QueryContext(ctx, `SELECT event_id, locale FROM popup_action_log WHERE action = 'click' ORDER BY event_id`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var id, l string
		require.NoError(t, rows.Scan(&id, &l))
		got[id] = l
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[string]string{"c1": "pt-BR", "c2": "pt-BR", "c4": "", "c5": "", "c6": "", "c7": "", "c8": "default", "c9": "pt-BR"}, got,
		"the log holds each click's attributed locale")

	q := report.StatsQuery{Bounds: report.DayBounds(t0, t0, time.UTC), UTC: true, Uniques: true}
	s, err := mysqlstore.NewStatsRepo(e.db).PopupStats(ctx, 1, q)
	require.NoError(t, err)
	one, two := int64(1), int64(2)
	assert.Equal(t, []report.LocaleCount{
		{Locale: "default", Impressions: 1, Clicks: 1, Users: &one},
		{Locale: "pt-BR", Impressions: 2, Clicks: 3, Users: &two},
	}, s.Locales)
	assert.Equal(t, int64(4), s.Days[0].Impressions, "the totals hold the impression without a locale")
	assert.Equal(t, int64(8), s.Days[0].Clicks, "and the clicks without one")

	other, err := mysqlstore.NewStatsRepo(e.db).PopupStats(ctx, 1, report.StatsQuery{Bounds: report.DayBounds(t0.AddDate(0, 0, 1), t0.AddDate(0, 0, 1), time.UTC), Uniques: true})
	require.NoError(t, err)
	assert.Empty(t, other.Locales, "a range without events has no locale")
}
