package browsertest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The audit log of every resource (issue 53, 6): popups, experiments, audiences, goals, settings
// and pacing, the holdout, operators and privacy requests, picked by resource, found by name, each
// change in words with the operator's role and the time in the browser's locale.

// sendAs sends an admin request with tok and requires want.
func sendAs(t *testing.T, in *apitest.Instance, tok, method, path, contentType, body string, want int) map[string]any {
	t.Helper()
	status, out, raw := in.Send(t, tok, method, path, contentType, strings.NewReader(body))
	require.Equal(t, want, status, "%s %s: %s", method, path, raw)
	return out
}

// auditEntries are the texts of the audit log's entries shown, in order.
func (b *browser) auditEntries() []string {
	b.t.Helper()
	var out []string
	b.eval(`[...document.querySelectorAll('#audit-list .audit-entry .audit-what')].map(e => e.textContent)`, &out)
	return out
}

// pickAudit applies the picker and the name search and waits for n entries.
func (b *browser) pickAudit(resource, name string, n int) {
	b.t.Helper()
	b.fill("#a-name", name)
	b.fill("#a-resource", resource) // a pick applies the filter at once
	b.waitFor(`document.querySelectorAll('#audit-list .audit-entry').length === ` + apitest.Itoa(int64(n)) +
		` && [...document.querySelectorAll('#audit-list .audit-entry')].every(e => ` + js(resource) + ` === 'all' || e.dataset.resource === ` + js(resource) + `)`)
}

func TestConsoleAuditLogOfEveryResourceInWords(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	const ed = "tok-editor"
	p := sendAs(t, in, ed, http.MethodPost, "/admin/v1/popups", "application/json", `{"name":"Spring sale","title":"Spring","status":"draft",
		"experiment":{"variants":[{"key":"a","weight":50,"title":"A"},{"key":"b","weight":50,"title":"B"}]}}`, http.StatusCreated)
	id := apitest.Itoa(int64(p["id"].(float64)))
	sendAs(t, in, ed, http.MethodPost, "/admin/v1/popups/"+id+"/experiment/start", "", "", http.StatusOK)
	sendAs(t, in, ed, http.MethodPost, "/admin/v1/popups/"+id+"/experiment/conclude", "application/json", `{"variant":"b"}`, http.StatusOK)
	aud := in.CreateAudience(t, "VIP")
	sendAs(t, in, apitest.Token, http.MethodPut, "/admin/v1/audiences/"+aud+"/members", "text/plain", "m0\nm1\nm2\nm3\nm4\n", http.StatusOK)
	sendAs(t, in, apitest.Token, http.MethodPut, "/admin/v1/audiences/"+aud+"/members", "text/plain", "m2\nm3\nm4\nm5\nm6\n", http.StatusOK)
	sendAs(t, in, apitest.Token, http.MethodPost, "/admin/v1/goals", "application/json", `{"key":"signup","name":"Signup"}`, http.StatusCreated)
	sendAs(t, in, apitest.Token, http.MethodPut, "/admin/v1/settings", "application/json", `{"reporting_time_zone":"UTC","daily_cap":5,"holdout_percent":10}`, http.StatusOK)

	b := newBrowser(t, in)
	b.signInAs(apitest.RoleTokens["viewer"], "vera") // reading the log is every operator's
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audit"))
	b.waitFor(`document.querySelectorAll('#audit-list .audit-entry').length > 10`)
	all := strings.Join(b.auditEntries(), "\n")
	for _, want := range []string{
		"ed (editor) created popup “Spring sale”",
		"ed (editor) started experiment “Spring sale”",
		"ed (editor) concluded experiment “Spring sale” — variant B wins",
		"admin (admin) created audience “VIP”",
		"admin (admin) replaced the members of audience “VIP”: 5 members, +2 / −2",
		"admin (admin) created goal “Signup”",
		"admin set the most popups a user sees a day to 5",
		"admin started holdout period 1, keeping 10% of users from every popup",
		"The service’s configuration added operator “ed” as editor",
	} {
		assert.Contains(t, all, want)
	}
	for _, raw := range []string{"experiment_", "popup #", "_", "{", "null", "undefined"} {
		assert.NotContains(t, all, raw, "the log in words: no codes, ids or keys")
	}
	b.assertNoRawTerms("audit log")
	var shown, want string
	b.eval(`document.querySelector('#audit-list .audit-entry time').textContent`, &shown)
	b.eval(`(() => { const d = new Date(document.querySelector('#audit-list .audit-entry time').dateTime);
		return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }); })()`, &want)
	assert.True(t, strings.HasPrefix(shown, want), "%q in the browser's locale (%q)", shown, want)
	b.axeCheck("audit log of every resource")
	b.shot("audit-all", "")

	// one resource at a time, and by name whatever its case
	b.pickAudit("experiments", "", 2)
	assert.Equal(t, []string{"ed (editor) concluded experiment “Spring sale” — variant B wins", "ed (editor) started experiment “Spring sale”"}, b.auditEntries())
	b.pickAudit("operators", "", 5)
	b.pickAudit("all", "vIp", 3)
	assert.Equal(t, "admin (admin) replaced the members of audience “VIP”: 5 members, +2 / −2", b.auditEntries()[0])
	b.pickAudit("settings", "", 3)
	b.pickAudit("holdout", "", 1)
	b.pickAudit("popups", "spring", 1)
	b.run(chromedp.Click(`#audit-list .audit-entry details summary`, chromedp.ByQuery))
	b.waitFor(`document.querySelector('#audit-list .audit-entry table.diff')`)
	b.axeCheck("audit log, a popup's change opened")
	b.pickAudit("privacy", "", 0)
	b.waitFor(`document.querySelector('#audit-list').textContent.includes('No entries')`)
}
