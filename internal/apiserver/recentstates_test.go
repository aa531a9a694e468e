package apiserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

// TestRecentStateIsCheckedAgainstTheStoredOne: with POPUP_RECENT_STATE_CACHE_SIZE on, instance a
// decides a user's third impression on the state it recorded for the first, although instance b
// recorded the second since: the record script refuses that state, a reads the stored one, and
// every impression is recorded once.
func TestRecentStateIsCheckedAgainstTheStoredOne(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	cfg.RecentStateCacheSize = 1000
	clk := newClock()
	a := start(t, cfg, clk)
	b := start(t, cfg, clk)
	id := a.createPopup(t, popupSpec("recent", map[string]any{"reshow_after_seconds": 60}))
	const q = "uid=recent-1&platform=ios&app_version=8.10.0&region=us&lang=en"
	require.Eventually(t, func() bool { got, _ := b.get(t, q); return got == id }, 5*time.Second, 20*time.Millisecond,
		"b shows the popup (its first impression)")

	for i, in := range []*instance{a, a, b, a} {
		clk.Advance(61 * time.Second)
		got, res := in.get(t, q)
		require.Equal(t, id, got, "request %d: the reshow interval is over", i)
		require.NotNil(t, res.Body["config_version"], "request %d: a real answer, not a degraded one", i)
	}
	res := a.adminDo(t, http.MethodGet, "/admin/v1/users/recent-1/state", nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.EqualValues(t, 5, res.Body["impressions_today"], "five impressions, each recorded once")
	assert.Zero(t, a.metric(t, `popup_decisions_total{outcome="conflict"}`), "a's stale state cost a read, not the answer")
}
