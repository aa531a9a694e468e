package settings_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestPacingSettingReachesEveryInstance: the min gap set through one instance's admin API holds
// on another instance within 2 s, and GET /admin/v1/settings shows it (the daily cap's default
// being POPUP_USER_DAILY_CAP).
func TestPacingSettingReachesEveryInstance(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.UserDailyCap = 7
	a, b := apitest.Start(t, cfg, nil), apitest.Start(t, cfg, nil)
	first := a.CreatePopup(t, apitest.PopupSpec("first", map[string]any{"priority": 10}))
	second := a.CreatePopup(t, apitest.PopupSpec("second", map[string]any{"priority": 5}))

	res := a.AdminDo(t, http.MethodGet, "/admin/v1/settings", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.EqualValues(t, 7, res.Body["daily_cap"], "POPUP_USER_DAILY_CAP is the initial value")
	assert.EqualValues(t, 0, res.Body["min_gap_seconds"])

	// twice shows what user uid gets on two homepage opens of instance b.
	twice := func(uid string) (int64, int64) {
		q := "platform=ios&app_version=1&uid=" + uid
		one, _ := b.Get(t, q)
		two, _ := b.Get(t, q)
		return one, two
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		one, two := twice("before-" + apitest.Itoa(int64(n)))
		if one == first && two == second {
			break // b serves both popups, no gap between them
		}
		require.False(t, time.Now().After(deadline), "b never served both popups")
		time.Sleep(50 * time.Millisecond)
	}

	res = a.AdminDo(t, http.MethodPut, "/admin/v1/settings", map[string]any{"reporting_time_zone": "UTC", "min_gap_seconds": 600})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.EqualValues(t, 600, res.Body["min_gap_seconds"])
	assert.EqualValues(t, 7, res.Body["daily_cap"], "left out: unchanged")
	changed := time.Now()
	for n := 0; ; n++ {
		one, two := twice("after-" + apitest.Itoa(int64(n)))
		if one == first && two == 0 {
			break
		}
		require.Less(t, time.Since(changed), 2*time.Second, "the min gap did not reach the other instance within 2 s")
		time.Sleep(20 * time.Millisecond)
	}
	res = b.AdminDo(t, http.MethodGet, "/admin/v1/preview?platform=ios&app_version=1&uid=after-0", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Contains(t, res.Raw, `"reason":"min_gap"`)
}
