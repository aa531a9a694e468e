package results_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

type statsDayBody struct {
	Date        string  `json:"date"`
	Impressions int64   `json:"impressions"`
	Clicks      int64   `json:"clicks"`
	Closes      int64   `json:"closes"`
	CTR         float64 `json:"ctr"`
}

type statsTotalsBody struct {
	PopupID      int64          `json:"popup_id"`
	Impressions  int64          `json:"impressions"`
	Clicks       int64          `json:"clicks"`
	Closes       int64          `json:"closes"`
	CTR          float64        `json:"ctr"`
	UsersReached int64          `json:"users_reached"`
	Days         []statsDayBody `json:"days"`
}

type popupStatsResp struct {
	PopupID int64           `json:"popup_id"`
	From    string          `json:"from"`
	To      string          `json:"to"`
	Days    []statsDayBody  `json:"days"`
	Totals  statsTotalsBody `json:"totals"`
}

type allStatsResp struct {
	From   string            `json:"from"`
	To     string            `json:"to"`
	Popups []statsTotalsBody `json:"popups"`
}

// sqlDay is what the action log itself says about one popup and day.
type sqlDay struct{ imp, clk, cls int64 }

func TestStatsEndpointsAgreeWithTheActionLog(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	ctx := context.Background()
	clk := apitest.NewClock() // 2026-11-22 10:00 UTC
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, clk)
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	require.NoError(t, err)
	defer db.Close()

	a := api.CreatePopup(t, map[string]any{"name": "stats-a"})
	b := api.CreatePopup(t, map[string]any{"name": "stats-b"})
	quiet := api.CreatePopup(t, map[string]any{"name": "stats-quiet"})

	// Events over 20 days ending today, written the way the worker writes them (some twice).
	today := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var events []event.Event
	for i := range 900 {
		day := i % 20
		if day == 3 || day == 4 {
			continue // days without events inside the default range
		}
		at := today.AddDate(0, 0, -day).Add(time.Duration(i%23) * time.Hour)
		e := event.Event{ID: fmt.Sprintf("s%d", i), UID: fmt.Sprintf("su%d", i%57), PopupID: []int64{a, b}[i%2],
			Action: []event.Action{event.Impression, event.Impression, event.Impression, event.Click, event.Close}[i%5], At: at, NextShowAt: at}
		if e.Action == event.Impression {
			e.Impressions = 1
		}
		events = append(events, e)
	}
	w := mysqlstore.NewEventWriter(db)
	require.NoError(t, w.WriteBatch(ctx, events[:500]))
	require.NoError(t, w.WriteBatch(ctx, events[300:]), "a redelivery overlapping the first batch")

	logDays := func(popupID int64) map[string]sqlDay {
		rows, err := db.QueryContext(ctx, `SELECT DATE_FORMAT(event_at, '%Y-%m-%d'), SUM(action = 'impression'), SUM(action = 'click'), SUM(action = 'close')
			FROM popup_action_log WHERE popup_id = ? GROUP BY DATE(event_at)`, popupID)
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]sqlDay{}
		for rows.Next() {
			var d string
			var s sqlDay
			require.NoError(t, rows.Scan(&d, &s.imp, &s.clk, &s.cls))
			out[d] = s
		}
		require.NoError(t, rows.Err())
		return out
	}
	reached := func(popupID int64) int64 {
		var n, viaLog int64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_user_state WHERE popup_id = ? AND impressions > 0`, popupID).Scan(&n))
		require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT uid) FROM popup_action_log WHERE popup_id = ? AND action = 'impression'`, popupID).Scan(&viaLog))
		require.Equal(t, viaLog, n, "these events' state counts an impression exactly for users with an impression event")
		return n
	}
	checkDays := func(t *testing.T, popupID int64, from, to string, days []statsDayBody, totals statsTotalsBody) {
		t.Helper()
		want := logDays(popupID)
		var wantTotals sqlDay
		f, _ := time.Parse(time.DateOnly, from)
		tt, _ := time.Parse(time.DateOnly, to)
		require.Len(t, days, int(tt.Sub(f).Hours()/24)+1, "every day of the range")
		for i, d := range days {
			require.Equal(t, f.AddDate(0, 0, i).Format(time.DateOnly), d.Date)
			w := want[d.Date]
			assert.Equal(t, w, sqlDay{d.Impressions, d.Clicks, d.Closes}, d.Date)
			if w.imp > 0 {
				assert.InDelta(t, float64(w.clk)/float64(w.imp), d.CTR, 1e-9, d.Date)
			} else {
				assert.Zero(t, d.CTR)
			}
			wantTotals.imp += w.imp
			wantTotals.clk += w.clk
			wantTotals.cls += w.cls
		}
		assert.Equal(t, wantTotals, sqlDay{totals.Impressions, totals.Clicks, totals.Closes})
		assert.InDelta(t, float64(wantTotals.clk)/float64(wantTotals.imp), totals.CTR, 1e-9)
		assert.Equal(t, reached(popupID), totals.UsersReached)
	}
	getJSON := func(t *testing.T, path string, into any) {
		t.Helper()
		res := api.AdminDo(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		require.NoError(t, json.Unmarshal([]byte(res.Raw), into))
	}

	t.Run("default range: the last 14 days ending today", func(t *testing.T) {
		var r popupStatsResp
		getJSON(t, "/admin/v1/popups/"+apitest.Itoa(a)+"/stats", &r)
		assert.Equal(t, a, r.PopupID)
		assert.Equal(t, "2026-11-09", r.From)
		assert.Equal(t, "2026-11-22", r.To)
		checkDays(t, a, r.From, r.To, r.Days, r.Totals)
		assert.Zero(t, r.Days[len(r.Days)-4].Impressions+r.Days[len(r.Days)-4].Clicks, "a day without events is there, with zeros")
	})
	t.Run("explicit range", func(t *testing.T) {
		var r popupStatsResp
		getJSON(t, "/admin/v1/popups/"+apitest.Itoa(b)+"/stats?from=2026-11-01&to=2026-11-30", &r)
		assert.Equal(t, "2026-11-01", r.From)
		checkDays(t, b, r.From, r.To, r.Days, r.Totals)
	})
	t.Run("a popup without events", func(t *testing.T) {
		var r popupStatsResp
		getJSON(t, "/admin/v1/popups/"+apitest.Itoa(quiet)+"/stats?from=2026-11-20&to=2026-11-22", &r)
		assert.Len(t, r.Days, 3)
		assert.Equal(t, statsTotalsBody{}, r.Totals)
	})
	t.Run("all popups", func(t *testing.T) {
		var r allStatsResp
		getJSON(t, "/admin/v1/stats?from=2026-11-01&to=2026-11-22&days=true", &r)
		require.Len(t, r.Popups, 2, "only popups with events")
		for _, p := range r.Popups {
			checkDays(t, p.PopupID, r.From, r.To, p.Days, p)
		}
		var plain allStatsResp
		getJSON(t, "/admin/v1/stats?from=2026-11-01&to=2026-11-22", &plain)
		require.Len(t, plain.Popups, 2)
		assert.Nil(t, plain.Popups[0].Days, "days only when asked")
		assert.Equal(t, r.Popups[0].Impressions, plain.Popups[0].Impressions)
	})

	bad := []struct {
		name, path, field string
		status            int
	}{
		{"from not a date", "/admin/v1/popups/" + apitest.Itoa(a) + "/stats?from=2026-13-01", "from", http.StatusBadRequest},
		{"to not a date", "/admin/v1/popups/" + apitest.Itoa(a) + "/stats?to=yesterday", "to", http.StatusBadRequest},
		{"from after to", "/admin/v1/popups/" + apitest.Itoa(a) + "/stats?from=2026-11-10&to=2026-11-09", "from", http.StatusBadRequest},
		{"over 366 days", "/admin/v1/stats?from=2025-01-01&to=2026-01-02", "from", http.StatusBadRequest},
		{"past the calendar", "/admin/v1/stats?from=9999-12-30", "to", http.StatusBadRequest},
		{"days not a flag", "/admin/v1/stats?days=maybe", "days", http.StatusBadRequest},
		{"unknown popup", "/admin/v1/popups/999999999/stats", "", http.StatusNotFound},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			res := api.AdminDo(t, http.MethodGet, tt.path, nil)
			require.Equal(t, tt.status, res.Status, res.Raw)
			if tt.field != "" {
				assert.Contains(t, res.Raw, `"field":"`+tt.field+`"`)
			}
		})
	}
	t.Run("366 days is the limit", func(t *testing.T) {
		var r allStatsResp
		getJSON(t, "/admin/v1/stats?from=2025-01-01&to=2026-01-01", &r)
		assert.Equal(t, "2025-01-01", r.From)
	})
}
