package apiserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/testenv"
)

const q = apitest.UserQuery

func popupSpec(name string, extra map[string]any) map[string]any {
	return apitest.PopupSpec(name, extra)
}

// TestDisplayRulesThroughHTTP walks every display rule of docs/CONTRACT.md §2 through the real API, Redis and
// MariaDB, with a settable clock instead of sleeps.
func TestDisplayRulesThroughHTTP(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	t.Run("reshow interval hides the popup until it passes", func(t *testing.T) {
		clk := newClock()
		api := start(t, testConfig(t), clk)
		id := api.createPopup(t, popupSpec("reshow", map[string]any{"reshow_after_seconds": 2}))

		got, res := api.get(t, q)
		assert.Equal(t, id, got)
		assert.NotEmpty(t, res.Body["decision_id"])
		assert.NotNil(t, res.Body["config_version"])
		got, _ = api.get(t, q)
		assert.Zero(t, got, "shown once: hidden for 2 s")
		clk.Advance(1999 * time.Millisecond)
		got, _ = api.get(t, q)
		assert.Zero(t, got, "still hidden 1 ms before the interval ends")
		clk.Advance(time.Millisecond)
		got, _ = api.get(t, q)
		assert.Equal(t, id, got, "shown again at exactly 2 s")
	})

	t.Run("click cooldown -1 hides it forever", func(t *testing.T) {
		clk := newClock()
		api := start(t, testConfig(t), clk)
		id := api.createPopup(t, popupSpec("never", map[string]any{"reshow_after_seconds": 2, "click_cooldown_seconds": -1}))
		got, _ := api.get(t, q)
		require.Equal(t, id, got)
		res := api.action(t, id, map[string]any{"uid": "u1", "action": "click"})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
		assert.Equal(t, "accepted", res.Body["status"])
		clk.Advance(10 * 365 * 24 * time.Hour)
		got, _ = api.get(t, q)
		assert.Zero(t, got)
	})

	t.Run("click cooldown longer than reshow", func(t *testing.T) {
		clk := newClock()
		api := start(t, testConfig(t), clk)
		id := api.createPopup(t, popupSpec("click", map[string]any{"reshow_after_seconds": 2, "click_cooldown_seconds": 5}))
		got, _ := api.get(t, q)
		require.Equal(t, id, got)
		require.Equal(t, http.StatusAccepted, api.action(t, id, map[string]any{"uid": "u1", "action": "click"}).Status)
		clk.Advance(2 * time.Second)
		got, _ = api.get(t, q)
		assert.Zero(t, got, "the click's cooldown outlasts the reshow")
		clk.Advance(3 * time.Second)
		got, _ = api.get(t, q)
		assert.Equal(t, id, got)
	})

	t.Run("close cooldown", func(t *testing.T) {
		clk := newClock()
		api := start(t, testConfig(t), clk)
		id := api.createPopup(t, popupSpec("close", map[string]any{"reshow_after_seconds": 2, "close_cooldown_seconds": 4}))
		got, _ := api.get(t, q)
		require.Equal(t, id, got)
		require.Equal(t, http.StatusAccepted, api.action(t, id, map[string]any{"uid": "u1", "action": "close"}).Status)
		clk.Advance(3 * time.Second)
		got, _ = api.get(t, q)
		assert.Zero(t, got)
		clk.Advance(time.Second)
		got, _ = api.get(t, q)
		assert.Equal(t, id, got)
	})

	t.Run("a short click cooldown never shortens the reshow", func(t *testing.T) {
		clk := newClock()
		api := start(t, testConfig(t), clk)
		id := api.createPopup(t, popupSpec("short", map[string]any{"reshow_after_seconds": 10, "click_cooldown_seconds": 1}))
		got, _ := api.get(t, q)
		require.Equal(t, id, got)
		require.Equal(t, http.StatusAccepted, api.action(t, id, map[string]any{"uid": "u1", "action": "click"}).Status)
		clk.Advance(2 * time.Second)
		got, _ = api.get(t, q)
		assert.Zero(t, got)
	})

	t.Run("max impressions over the popup's life", func(t *testing.T) {
		clk := newClock()
		api := start(t, testConfig(t), clk)
		id := api.createPopup(t, popupSpec("max", map[string]any{"reshow_after_seconds": 1, "max_impressions": 2}))
		for i := 0; i < 2; i++ {
			got, _ := api.get(t, q)
			require.Equal(t, id, got, "impression %d", i+1)
			clk.Advance(time.Second)
		}
		got, _ := api.get(t, q)
		assert.Zero(t, got)
	})

	t.Run("daily cap across popups, reset the next UTC day, with fall-through", func(t *testing.T) {
		clk := newClock()
		cfg := testConfig(t)
		cfg.UserDailyCap = 2
		api := start(t, cfg, clk)
		high := api.createPopup(t, popupSpec("high", map[string]any{"priority": 10}))
		mid := api.createPopup(t, popupSpec("mid", map[string]any{"priority": 5}))
		low := api.createPopup(t, popupSpec("low", map[string]any{"priority": 5}))
		var shown []int64
		for i := 0; i < 3; i++ {
			got, _ := api.get(t, q)
			shown = append(shown, got)
		}
		assert.Equal(t, []int64{high, mid, 0}, shown, "priority desc, id asc among equals, then the cap")
		clk.Advance(14 * time.Hour) // 10:00 + 14 h = the next UTC day
		got, _ := api.get(t, q)
		assert.Equal(t, low, got, "the cap resets; the others are within their reshow")
	})

	t.Run("targeting, window and rollout", func(t *testing.T) {
		clk := newClock()
		api := start(t, testConfig(t), clk)
		id := api.createPopup(t, popupSpec("targeted", map[string]any{
			"start_at":  clk.Now().Add(time.Hour).Format(time.RFC3339),
			"targeting": map[string]any{"platforms": []string{"android"}, "min_app_version": "8.10.0", "regions": []string{"cn"}, "langs": []string{"zh"}},
		}))
		base := "platform=android&app_version=8.10.0&region=CN&lang=zh"
		got, _ := api.get(t, "uid=a1&"+base)
		assert.Zero(t, got, "before start_at")
		clk.Advance(time.Hour)
		tests := []struct {
			name  string
			query string
			want  int64
		}{
			{"all match (region case-insensitive)", "uid=a2&" + base, id},
			{"platform", "uid=a3&platform=ios&app_version=8.10.0&region=cn&lang=zh", 0},
			{"8.9.9 is below 8.10.0", "uid=a4&platform=android&app_version=8.9.9&region=cn&lang=zh", 0},
			{"region", "uid=a5&platform=android&app_version=9&region=us&lang=zh", 0},
			{"missing lang", "uid=a6&platform=android&app_version=9&region=cn", 0},
		}
		for _, tt := range tests {
			got, _ := api.get(t, tt.query)
			assert.Equal(t, tt.want, got, tt.name)
		}

		zero := api.createPopup(t, popupSpec("qa-only", map[string]any{
			"targeting": map[string]any{"rollout_percent": 0, "uids": []string{"qa-device-1"}}}))
		got, _ = api.get(t, "uid=someone&platform=web&app_version=1")
		assert.Zero(t, got, "0% rollout admits nobody else")
		got, _ = api.get(t, "uid=qa-device-1&platform=web&app_version=1")
		assert.Equal(t, zero, got, "the allow-list bypasses rollout")
	})
}
