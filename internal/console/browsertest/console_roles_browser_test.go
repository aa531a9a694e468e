package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The console reflects the operator's role (docs/CONTRACT.md §9, issue 22): it says who is
// signed in, offers only the controls the role may use (a control it may not use is absent, not
// disabled), and a 403 it still gets names the role needed and keeps the operator's edits.

// signInAs signs in with tok and waits for the popup list and for the header naming the operator.
func (b *browser) signInAs(tok, operator string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/"))
	b.fill("#token", tok)
	b.run(chromedp.Click("#signin", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-results[aria-busy=false]')`)
	b.waitFor(`document.querySelector('#whoami') && !document.querySelector('#whoami').hidden && document.querySelector('#whoami').textContent.includes(` + js(operator) + `)`)
}

// offered tells, for each selector, whether the page holds such an element (present at all,
// disabled or not).
func (b *browser) offered(sels ...string) map[string]bool {
	b.t.Helper()
	out := map[string]bool{}
	for _, s := range sels {
		var ok bool
		b.eval(`!!document.querySelector(`+js(s)+`)`, &ok)
		out[s] = ok
	}
	return out
}

// want builds the expected answer of offered: every selector, true for those in yes.
func want(sels []string, yes ...string) map[string]bool {
	out := map[string]bool{}
	for _, s := range sels {
		out[s] = false
	}
	for _, s := range yes {
		out[s] = true
	}
	return out
}

func TestConsoleRolesOfferOnlyWhatTheRoleMay(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	draft := in.CreatePopup(t, map[string]any{"name": "a draft", "status": "draft", "title": "Draft title"})
	live := in.CreatePopup(t, map[string]any{"name": "a live one", "status": "active", "title": "First"})
	res := in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(live), map[string]any{"name": "a live one", "status": "active", "title": "Second"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw) // revision 2: revision 1 can be rolled back to

	listSels := []string{`main a[href="#/popups/new"]`, `nav a[data-nav="operators"]`}
	draftSels := []string{"#save", "#publish", "#duplicate", "#archive", "#pause", "#readonly-note"}
	liveSels := []string{"#save", "#publish", "#duplicate", "#archive", "#pause", "#readonly-note", "#history button[data-rollback]"}
	importSels := []string{"#export", "#import-dry", "#import-apply"}
	tests := []struct {
		role, operator, who string
		list, draft, live   map[string]bool
		draftStatuses       []string
		importing           map[string]bool
	}{
		{
			role: "viewer", operator: "vera", who: "vera (viewer)",
			list:          want(listSels),
			draft:         want(draftSels, "#readonly-note"),
			draftStatuses: []string{"draft"}, // shown as it is, read-only
			live:          want(liveSels, "#readonly-note"),
			importing:     want(importSels, "#export"),
		},
		{
			role: "editor", operator: "ed", who: "ed (editor)",
			list:          want(listSels, `main a[href="#/popups/new"]`),
			draft:         want(draftSels, "#save", "#duplicate"),
			draftStatuses: []string{"draft"},
			live:          want(liveSels, "#duplicate", "#readonly-note"),
			importing:     want(importSels, "#export", "#import-dry"),
		},
		{
			role: "publisher", operator: "pat", who: "pat (publisher)",
			list:          want(listSels, `main a[href="#/popups/new"]`),
			draft:         want(draftSels, "#save", "#publish", "#duplicate", "#archive"),
			draftStatuses: []string{"draft", "active", "paused", "archived"},
			live:          want(liveSels, "#save", "#duplicate", "#archive", "#pause", "#history button[data-rollback]"),
			importing:     want(importSels, "#export", "#import-dry", "#import-apply"),
		},
		{
			role: "admin", operator: "admin", who: "admin (admin)",
			list:          want(listSels, `main a[href="#/popups/new"]`, `nav a[data-nav="operators"]`),
			draft:         want(draftSels, "#save", "#publish", "#duplicate", "#archive"),
			draftStatuses: []string{"draft", "active", "paused", "archived"},
			live:          want(liveSels, "#save", "#duplicate", "#archive", "#pause", "#history button[data-rollback]"),
			importing:     want(importSels, "#export", "#import-dry", "#import-apply"),
		},
	}
	first := newBrowser(t, in)
	for i, tt := range tests {
		b := first
		if i > 0 {
			b = first.newTab() // a page of its own: its own sign-in
		}
		b.signInAs(apitest.RoleTokens[tt.role], tt.operator)
		assert.Contains(t, b.text("#whoami"), tt.who, tt.role)
		assert.Equal(t, tt.list, b.offered(listSels...), "%s: the list", tt.role)

		b.openPopup(draft, 1)
		assert.Equal(t, tt.draft, b.offered(draftSels...), "%s: a draft", tt.role)
		var statuses []string
		b.eval(`[...document.querySelectorAll('#popup-form [name=status] option')].map(o => o.value)`, &statuses)
		assert.Equal(t, tt.draftStatuses, statuses, "%s: the status choices of a draft", tt.role)

		b.openPopup(live, 2)
		b.waitFor(`document.querySelector('#history li[data-revision="1"]')`)
		assert.Equal(t, tt.live, b.offered(liveSels...), "%s: a live popup", tt.role)
		if tt.live["#readonly-note"] {
			note := b.text("#readonly-note")
			assert.Contains(t, note, "publisher", "%s: the note says who can change a live popup", tt.role)
			var editable int
			b.eval(`[...document.querySelectorAll('#popup-form input, #popup-form select, #popup-form textarea')].filter(el => !el.disabled && !el.readOnly).length`, &editable)
			assert.Zero(t, editable, "%s: the read-only view has no editable field", tt.role)
			b.axeCheck(tt.role + " read-only live popup")
			if tt.role == "editor" {
				b.run(page.BringToFront()) // a tab in the background is never painted: its screenshot would wait forever
				b.shot("roles-readonly-live", "")
			}
		}

		b.run(chromedp.Navigate(b.origin + "/admin/ui/#/import"))
		b.waitFor(`document.querySelector('#export')`)
		assert.Equal(t, tt.importing, b.offered(importSels...), "%s: import / export", tt.role)

		b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audit"))
		b.waitFor(`document.querySelector('#audit-list article, #audit-list p')`)
		assert.Equal(t, map[string]bool{"#audit-list button": false}, b.offered("#audit-list button"), "%s: the audit log offers no write", tt.role)

		if tt.role == "viewer" {
			// the address of a new popup: no form, a note instead
			b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/new"))
			b.waitFor(`document.querySelector('#readonly-note')`)
			assert.Equal(t, map[string]bool{"#popup-form": false, "#save": false}, b.offered("#popup-form", "#save"))
			assert.Contains(t, b.text("#readonly-note"), "editor")
		}
		if tt.role == "admin" {
			b.run(chromedp.Click(`nav a[data-nav="operators"]`, chromedp.ByQuery))
			b.waitFor(`document.querySelector('#operators-table tbody tr')`)
			var rows [][]string
			b.eval(`[...document.querySelectorAll('#operators-table tbody tr')].map(tr => [...tr.children].map(c => c.textContent))`, &rows)
			assert.Equal(t, [][]string{{"admin", "admin"}, {"ed", "editor"}, {"old", "admin"}, {"pat", "publisher"}, {"vera", "viewer"}}, rows)
			assert.Equal(t, map[string]bool{"#operators-table input": false, "main form": false}, b.offered("#operators-table input", "main form"), "read-only")
			b.axeCheck("operators")
			b.run(page.BringToFront())
			b.shot("operators", "")
		}
	}
}

// An editor creates and saves drafts through the form; a 403 the page still gets (here: a status
// the form no longer offers an editor, put back by hand) names the role needed and keeps the edits.
func TestConsoleEditorSavesDraftsAndA403KeepsEdits(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	draft := in.CreatePopup(t, map[string]any{"name": "ed's draft", "status": "draft", "title": "Draft title"})
	b := newBrowser(t, in)
	b.signInAs(apitest.RoleTokens["editor"], "ed")

	// a new draft
	b.newForm()
	b.fill("#f-name", "ed's new one")
	b.fill("#f-title", "Fresh")
	assert.Equal(t, "Create draft", b.text("#save"))
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="1"]')`)
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups?q="+url.QueryEscape("ed's new one"), nil)
	require.Len(t, res.Body["popups"], 1, res.Raw)
	assert.Equal(t, "draft", res.Body["popups"].([]any)[0].(map[string]any)["status"])

	// saving an existing draft
	b.openPopup(draft, 1)
	b.fill("#f-title", "Edited by ed")
	assert.Equal(t, "Save draft", b.text("#save"))
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="2"]')`)
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(draft), nil)
	assert.Equal(t, "Edited by ed", res.Body["title"])
	assert.Equal(t, "draft", res.Body["status"])

	// the page is made to publish anyway: the API refuses (403), the page names the role needed,
	// says nothing was written, and the edits stay in the form
	b.spyWrites()
	b.fill("#f-title", "Unsaved words")
	b.eval(`(() => { const s = document.querySelector('#f-status'); s.append(new Option('active', 'active')); s.value = 'active';
		s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, nil)
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#form-errors .alert')`)
	msg := b.text("#form-errors")
	assert.Contains(t, msg, "publisher role", "the message names the role needed")
	assert.Contains(t, msg, "kept", "the message says the edits are kept")
	assert.Equal(t, "Unsaved words", b.value("#f-title"), "the edits are kept")
	assert.Equal(t, []string{fmt.Sprintf(`PUT /admin/v1/popups/%d "2"`, draft)}, b.writes())
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(draft), nil)
	assert.Equal(t, float64(2), res.Body["revision"], "nothing was written")
	b.axeCheck("403 on save")
}

// A role lowered while the page is open: the page was told publisher (its /me answer is stubbed
// before the page loads), the API knows an editor. Pause is offered, refused (403): the message
// names the role needed, and the title typed meanwhile stays in the form.
func TestConsoleRoleChangedMeanwhile403KeepsEdits(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	live := in.CreatePopup(t, map[string]any{"name": "live", "status": "active", "title": "Stored"})
	b := newBrowser(t, in)
	stub := `(() => { const f = window.fetch; window.fetch = (u, o) => String(u).endsWith('/admin/v1/me')
		? Promise.resolve(new Response(JSON.stringify({operator: 'ed', role: 'publisher', can: {edit_drafts: true, publish: true, admin: false}}), {status: 200, headers: {'Content-Type': 'application/json'}}))
		: f(u, o); })()`
	b.run(chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(stub).Do(ctx)
		return err
	}))
	b.signInAs(apitest.RoleTokens["editor"], "ed (publisher)")
	b.openPopup(live, 1)
	b.fill("#f-title", "Typed meanwhile")
	b.run(chromedp.Click("#pause", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#form-errors .alert')`)
	msg := b.text("#form-errors")
	assert.Contains(t, msg, "publisher role")
	assert.Contains(t, msg, "kept")
	assert.Equal(t, "Typed meanwhile", b.value("#f-title"), "the edits are kept")
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(live), nil)
	assert.Equal(t, "active", res.Body["status"], "nothing was written")
	assert.Equal(t, float64(1), res.Body["revision"])
}

// /me ships with the console, so a /me that fails (here a 404 not_found, which the console once
// took for "an older server without roles" and granted everything for) is an error: the page says
// so and offers no control, not even to an admin.
func TestConsoleGrantsNothingWhenMeFails(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	b := newBrowser(t, in)
	stub := `(() => { const f = window.fetch; window.fetch = (u, o) => String(u).endsWith('/admin/v1/me')
		? Promise.resolve(new Response(JSON.stringify({error: {code: 'not_found', message: 'no such route'}}), {status: 404, headers: {'Content-Type': 'application/json'}}))
		: f(u, o); })()`
	b.run(chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(stub).Do(ctx)
		return err
	}))
	b.run(chromedp.Navigate(b.origin + "/admin/ui/"))
	b.fill("#token", apitest.RoleTokens["admin"])
	b.run(chromedp.Click("#signin", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#main .alert.error')`)
	assert.Contains(t, b.text("#main .alert.error"), "Who is signed in cannot be read now")
	sels := []string{`a[href="#/popups/new"]`, "#nav-operators", "#nav-settings", "#popup-results"}
	assert.Equal(t, want(sels), b.offered(sels...))
}
