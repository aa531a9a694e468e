package browsertest

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The console's Goals page (issue 36) in a real Chromium against a real popup-api on MariaDB and
// Redis: a publisher creates a goal, sees a bad key named on its field with nothing created,
// deletes a goal after confirming; a viewer reads the list and is offered no form. Every state is
// checked with axe.
func TestConsoleGoals(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer"}
	in := apitest.Start(t, cfg, nil)
	b := newBrowser(t, in)
	b.signIn()

	b.run(chromedp.Click(`nav a[data-nav="goals"]`, chromedp.ByQuery))
	b.waitFor(`document.querySelector('#goal-create') && document.querySelector('#goal-results[aria-busy=false]')`)
	assert.Equal(t, "No goal yet.", b.text("#goal-none"))
	b.axeCheck("goals (empty)")

	// a bad key: named on its field, nothing created
	b.fill("#new-goal-key", "Purchase!")
	b.fill("#new-goal-name", "Purchase")
	b.run(chromedp.Click("#goal-create-submit", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#goal-create-errors').textContent.includes('1 field needs fixing')`)
	assert.Equal(t, "true", b.attr("#new-goal-key", "aria-invalid"))
	b.axeCheck("goals (a refused create)")
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/goals", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Empty(t, res.Body["goals"])

	// a value cap on a goal without values: named on its field, nothing created
	b.fill("#new-goal-key", "purchase")
	b.fill("#new-goal-cap", "100")
	b.run(chromedp.Click("#goal-create-submit", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#new-goal-cap').getAttribute('aria-invalid') === 'true'`)
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/goals", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Empty(t, res.Body["goals"])

	// created: in the list, as stored, its value cap too
	b.run(chromedp.SetValue("#new-goal-value", "sum", chromedp.ByQuery))
	b.fill("#new-goal-window", "48")
	b.run(chromedp.Click("#goal-create-submit", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#goal-table tr[data-key="purchase"]')`)
	assert.Contains(t, b.text(`#goal-table tr[data-key="purchase"]`), "48 h")
	assert.Contains(t, b.text(`#goal-table tr[data-key="purchase"]`), "100")
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/goals/purchase", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "sum", res.Body["value"])
	assert.Equal(t, 48.0, res.Body["window_hours"])
	assert.Equal(t, 100.0, res.Body["value_cap"])
	b.axeCheck("goals (one goal)")

	// deleted after confirming
	b.run(chromedp.Click("#goal-delete-purchase", chromedp.ByQuery))
	b.answerDialog("Delete goal purchase", true)
	b.waitFor(`document.querySelector('#goal-none')`)
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/goals/purchase", nil)
	assert.Equal(t, http.StatusNotFound, res.Status, res.Raw)

	// a viewer (signed in last: the tabs share the token) reads, and is offered neither the form
	// nor a delete
	res = in.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "signup", "name": "Sign-up"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	v := b.newTab()
	v.signInAs("tok-viewer", "vera")
	v.run(chromedp.Navigate(v.origin + "/admin/ui/#/goals"))
	v.waitFor(`document.querySelector('#goal-table tr[data-key="signup"]')`)
	assert.Equal(t, map[string]bool{"#goal-create": false, "#goal-delete-signup": false}, v.offered("#goal-create", "#goal-delete-signup"))
	v.axeCheck("goals (viewer)")
}
