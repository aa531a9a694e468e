package browsertest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestConsoleStatus: the console's Status page (issue 54) in a real Chromium against a real
// popup-api on MariaDB and Redis, read by a viewer: every line in words, nothing needing attention
// on a healthy service; then a backlog no worker drains and an erasure past its promise are named
// as needing attention, with what to check. Each state is checked with axe.
func TestConsoleStatus(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.PrivacyKey = apitest.PrivacyKey
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer"}
	clk := apitest.NewClock()
	clk.Advance(time.Since(clk.Now())) // today: the action log's days are made on MySQL's clock
	in := apitest.Start(t, cfg, clk)
	state := func() string {
		res := in.AdminDo(t, http.MethodGet, "/admin/v1/status", nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		s, _ := res.Body["state"].(string)
		return s
	}
	apitest.Eventually(t, 10*time.Second, "a healthy status", func() bool { return state() == "ok" })

	b := newBrowser(t, in)
	b.signInAs("tok-viewer", "vera")
	b.run(chromedp.Click(`nav a[data-nav="status"]`, chromedp.ByQuery))
	b.waitFor(`document.querySelector('#status-table')`)
	assert.Contains(t, b.text("#status-out"), "Nothing needs attention.")
	assert.Contains(t, b.text("#status-mysql"), "Reachable.")
	assert.Contains(t, b.text("#status-queue"), "No event waits to be written.")
	assert.Contains(t, b.text("#status-erasures"), "No erasure is waiting.")
	assert.Contains(t, b.text("#status-retention"), fmt.Sprintf("Keeps %d days: it holds 1 day", cfg.ActionLogRetention/(24*time.Hour)))
	assert.Contains(t, b.text("#status-instance"), "Ready: serving config version")
	assert.Contains(t, b.text("#status-audiences"), "No audience is loaded.")
	assert.Equal(t, "page", b.attr(`nav a[data-nav="status"]`, "aria-current"))
	b.axeCheck("status (healthy)")

	// No worker runs here: an action's event waits in the queue, an erasure waits for a worker.
	id := in.CreatePopup(t, apitest.PopupSpec("status-page", nil))
	res := in.Action(t, id, map[string]any{"uid": "status-page-1", "action": "close"})
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	res = in.AdminDo(t, http.MethodDelete, "/admin/v1/users/status-page-2", nil)
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	clk.Advance(3 * time.Minute)
	b.run(chromedp.Click("#status-refresh", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#status-queue[data-state=warning]')`)
	assert.Contains(t, b.text("#status-out"), "2 things need attention: Event queue, User erasures.")
	assert.Contains(t, b.text("#status-queue"), "Needs attention")
	assert.Contains(t, b.text("#status-queue"), "the oldest for 3 minutes")
	assert.Contains(t, b.text("#status-queue"), "is a worker running?")
	assert.Contains(t, b.text("#status-erasures"), "1 erasure waits, the oldest for 3 minutes. That is past the promised 60 seconds")
	b.axeCheck("status (attention)")
	b.shot("status", "")
}
