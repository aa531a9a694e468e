package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The console is safe for several operators at once and says what it means (issue 22): every
// write carries the version it was based on, unsaved edits are never lost silently, publishing
// is reviewed, durations have units, times their zone, list fields one entry per line, the
// audit log pages once, explain groups its reasons, and the list fits a phone.

// js quotes s as a JavaScript string literal.
func js(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// spyWrites records (once per document; a second call empties the record), from now on, every write the page makes (a fetch that is not a GET,
// but for the reads sent as a POST: the draft preview and the reassignment count) as
// "METHOD URL IF-MATCH" in window.__writes. The spy wraps fetch synchronously, so a write
// started by a key press is recorded by the time the key event has been handled.
func (b *browser) spyWrites() {
	b.t.Helper()
	b.eval(`(() => { window.__writes = []; if (window.__spied) return true; window.__spied = true; const f = window.fetch;
		const read = (u) => /\/admin\/v1\/(preview|popups\/\d+\/experiment\/reassignment)$/.test(String(u));
		window.fetch = (u, o) => { if (o && o.method && o.method !== 'GET' && !read(u)) window.__writes.push(o.method + ' ' + u + ' ' + ((o.headers && o.headers['If-Match']) || '-')); return f(u, o); };
		return true; })()`, nil)
}

func (b *browser) writes() []string {
	b.t.Helper()
	var w []string
	b.eval(`window.__writes`, &w)
	return w
}

// answerDialog waits for the shared dialog titled with titlePart and answers it.
func (b *browser) answerDialog(titlePart string, ok bool) {
	b.t.Helper()
	b.waitFor(`document.getElementById('confirm').open && document.getElementById('confirm-title').textContent.includes(` + js(titlePart) + `)`)
	if ok {
		b.run(chromedp.Click("#confirm-ok", chromedp.ByQuery))
	} else {
		b.run(chromedp.Click("#confirm-cancel", chromedp.ByQuery))
	}
	b.waitFor(`!document.getElementById('confirm').open`)
}

func (b *browser) openPopup(id int64, revision int) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id)))
	b.waitFor(fmt.Sprintf(`document.querySelector('#popup-form[data-id="%d"][data-revision="%d"]')`, id, revision))
}

func (b *browser) value(sel string) string {
	b.t.Helper()
	var v string
	b.eval(`document.querySelector(`+js(sel)+`).value`, &v)
	return v
}

// Findings 1 and 2 (after a 412): tab B, still showing revision 2, rolls back after tab A saved:
// refused, A's change intact; then B's edit, refused as stale, is kept, compared field by field
// with the newer version, and re-applied onto it.
func TestConsoleTwoTabsNeverOverwriteEachOther(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.CreatePopup(t, map[string]any{"name": "two tabs", "status": "active", "title": "First title"})
	res := in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(id), map[string]any{"name": "two tabs", "status": "active", "title": "Second title"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)

	a := newBrowser(t, in)
	a.signIn()
	b := a.newTab()
	b.signIn()
	a.openPopup(id, 2)
	b.openPopup(id, 2)
	b.spyWrites()

	a.fill("#f-title", "A's title")
	a.run(chromedp.Click("#save", chromedp.ByQuery))
	a.answerDialog("Publish", true)
	a.waitFor(`document.querySelector('#popup-form[data-revision="3"]')`)

	// B rolls back to revision 1 from its old page: refused, with a clear message
	b.waitFor(`document.querySelector('#history button[data-rollback="1"]')`)
	b.run(chromedp.Click(`#history button[data-rollback="1"]`, chromedp.ByQuery))
	b.answerDialog("Roll back", true)
	b.waitFor(`document.querySelector('#history .alert.error')`)
	assert.Contains(t, b.text("#history .alert.error"), "changed by someone else")
	assert.Equal(t, []string{fmt.Sprintf(`POST /admin/v1/popups/%d/rollback "2"`, id)}, b.writes(), "the rollback carried the version it was based on")
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Equal(t, float64(3), res.Body["revision"])
	assert.Equal(t, "A's title", res.Body["title"], "A's change is intact")

	// B edits the content and saves: refused (412); the edit stays, beside the newer version
	b.fill("#f-content", "B's content")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#stale table.compare')`)
	assert.Contains(t, b.text("#form-errors"), "changed by someone else")
	var rows [][]string
	b.eval(`[...document.querySelectorAll('#stale table.compare tbody tr')].map(tr => [...tr.children].map(c => c.textContent))`, &rows)
	assert.Equal(t, [][]string{{"title", "Second title", "A's title", "Second title"}, {"content", "(empty)", "(empty)", "B's content"}}, rows,
		"field, what B started from, stored now, B's form")
	assert.Equal(t, "B's content", b.value("#f-content"), "the operator's edit is kept")
	b.axeCheck("stale save comparison")
	b.run(page.BringToFront()) // a tab in the background is never painted: its screenshot would wait forever
	b.shot("edit-stale-compare", "#form-errors")

	// re-applied onto revision 3: A's title and B's content, saved as revision 4
	b.run(chromedp.Click("#reapply", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="3"]')`)
	assert.Equal(t, "A's title", b.value("#f-title"))
	assert.Equal(t, "B's content", b.value("#f-content"))
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#popup-form[data-revision="4"]')`)
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Equal(t, "A's title", res.Body["title"])
	assert.Equal(t, "B's content", res.Body["content"])
}

// Findings 2 and 10: Pause keeps typed edits; Enter never saves; leaving by a menu link, by
// sign-out or by reloading asks first; a draft offers no Pause; publishing shows the diff first.
func TestConsoleUnsavedEditsAndPublishing(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	live := in.CreatePopup(t, map[string]any{"name": "live one", "status": "active", "title": "Stored title"})
	draft := in.CreatePopup(t, map[string]any{"name": "draft one", "status": "draft", "title": "Draft title"})
	b := newBrowser(t, in)
	b.signIn()

	// a draft: no Pause or Resume; Enter in a field writes nothing
	b.openPopup(draft, 1)
	b.spyWrites()
	var pauseOffered bool
	b.eval(`!!document.querySelector('#pause')`, &pauseOffered)
	assert.False(t, pauseOffered, "Pause is not offered on a draft")
	b.run(chromedp.Click("#f-title", chromedp.ByQuery), chromedp.KeyEvent(" x"+kb.Enter))
	assert.Empty(t, b.writes(), "Enter in a field saves nothing")
	b.axeCheck("draft edit")

	// the live popup (leaving the draft's typed edit asks first): Enter writes nothing; Pause
	// keeps the typed title
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(live)))
	b.answerDialog("unsaved", true)
	b.waitFor(`document.querySelector('#popup-form[data-id="` + apitest.Itoa(live) + `"][data-revision="1"]')`)
	b.run(chromedp.Click("#f-title", chromedp.ByQuery), chromedp.KeyEvent(" (typed)"+kb.Enter))
	assert.Empty(t, b.writes(), "Enter in a field of a live popup saves nothing")
	b.run(chromedp.Click("#pause", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="2"]') && document.querySelector('#pause').textContent === 'Resume'`)
	assert.Equal(t, "Stored title (typed)", b.value("#f-title"), "Pause does not reload the stored version over typed edits")
	assert.Equal(t, []string{fmt.Sprintf(`PUT /admin/v1/popups/%d "1"`, live)}, b.writes())
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(live), nil)
	assert.Equal(t, "paused", res.Body["status"])
	assert.Equal(t, "Stored title", res.Body["title"], "Pause writes the status only")

	// reload or close: the browser is asked to confirm (beforeunload is cancelled)
	var cancelled bool
	b.eval(`(() => { const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; })()`, &cancelled)
	assert.True(t, cancelled, "leaving the page with unsaved edits asks first")

	// another menu link: asked in the page; Cancel stays with the edits
	b.run(chromedp.Click(`a[data-nav="audit"]`, chromedp.ByQuery))
	b.answerDialog("unsaved", false)
	var hash string
	b.eval(`location.hash`, &hash)
	assert.Equal(t, "#/popups/"+apitest.Itoa(live), hash)
	assert.Equal(t, "Stored title (typed)", b.value("#f-title"))
	// sign-out too
	b.run(chromedp.Click("#signout", chromedp.ByQuery))
	b.answerDialog("unsaved", false)
	var stored string
	b.eval(`sessionStorage.getItem('popup-admin-token') || ''`, &stored)
	assert.Equal(t, apitest.Token, stored, "sign-out was cancelled")

	// publishing the edit: a review with the diff against the stored version, nothing written yet
	b.spyWrites()
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.getElementById('confirm').open && document.querySelector('#confirm-body table.diff')`)
	var diff [][]string
	b.eval(`[...document.querySelectorAll('#confirm-body table.diff tbody tr')].map(tr => [...tr.children].map(c => c.textContent))`, &diff)
	assert.Equal(t, [][]string{{"title", "Stored title", "Stored title (typed)"}}, diff)
	assert.Empty(t, b.writes(), "nothing is written before Confirm")
	b.axeCheck("publish review")
	b.shot("edit-publish-review", "")
	b.answerDialog("Publish", false)
	assert.Empty(t, b.writes())
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#popup-form[data-revision="3"]')`)
	assert.Equal(t, []string{fmt.Sprintf(`PUT /admin/v1/popups/%d "2"`, live)}, b.writes())
	b.eval(`(() => { const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; })()`, &cancelled)
	assert.False(t, cancelled, "nothing unsaved: leaving asks nothing")

	// a save with no change writes nothing
	b.spyWrites()
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#toast').textContent.includes('Nothing to save')`)
	assert.Empty(t, b.writes())

	// edits, then a menu link, confirmed: the other screen opens
	b.fill("#f-content", "never saved")
	b.run(chromedp.Click(`a[data-nav="audit"]`, chromedp.ByQuery))
	b.answerDialog("unsaved", true)
	b.waitFor(`location.hash === '#/audit' && document.querySelector('#audit-list')`)
}

// Findings 4, 7 and 9: in a Los Angeles browser, durations with units ("2h" is an error, a
// cleared field is the API's default), times labelled with the zone, 02:30 on a spring-forward
// night refused, and a uid with a space kept whole and named in the error.
func TestConsoleFormSaysWhatItMeans(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	b := newBrowser(t, in)
	b.run(emulation.SetTimezoneOverride("America/Los_Angeles"))
	b.signIn()
	b.newForm()
	b.spyWrites()

	// the pre-fill is the API's defaults (docs/CONTRACT.md §2), in units
	assert.Equal(t, []string{"1", "days"}, []string{b.value("#f-reshow"), b.value("#f-reshow-unit")})
	assert.Equal(t, "0", b.value("#f-click"))
	assert.Equal(t, "", b.value("#f-close"), "empty: the same as the reshow interval")
	assert.Contains(t, b.text(`label[for="f-start"]`), "America/Los_Angeles")
	assert.Contains(t, b.text(`label[for="f-end"]`), "America/Los_Angeles")
	b.axeCheck("new popup, Los Angeles")

	b.fill("#f-name", "form says what it means")
	b.fill("#f-reshow", "")
	b.run(chromedp.SendKeys("#f-reshow", "2h"))
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#f-reshow[aria-invalid=true]')`)
	assert.Contains(t, b.text("#f-reshow-err"), "2h")
	assert.Empty(t, b.writes(), "\"2h\" is never sent")

	b.fill("#f-reshow", "2")
	b.fill("#f-reshow-unit", "hours")
	b.fill("#f-click", "")
	b.fill("#f-start", "2027-03-14T02:30")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#f-start[aria-invalid=true]')`)
	assert.Contains(t, b.text("#f-start-err"), "does not exist")
	assert.Contains(t, b.text("#f-start-err"), "America/Los_Angeles")
	assert.Empty(t, b.writes(), "a time that does not exist is never sent")

	// a uid with a space: one entry, refused by the API, the error names it
	b.fill("#f-start", "2027-03-14T03:30")
	b.fill("#f-uids", "qa-device-1\nqa 1\n")
	b.fill("#f-regions", "cn\nus")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#f-uids[aria-invalid=true]')`)
	assert.Contains(t, b.text("#f-uids-err"), "“qa 1”")
	assert.Contains(t, b.text("#f-uids-err"), "line 2")
	b.axeCheck("list field error")
	b.shot("edit-durations-zone", "#f-start")

	b.fill("#f-uids", "qa-device-1\nqa-1")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`/^#\/popups\/\d+$/.test(location.hash) && document.querySelector('#popup-form[data-revision="1"]')`)
	var id int64
	var hash string
	b.eval(`location.hash`, &hash)
	_, err := fmt.Sscanf(hash, "#/popups/%d", &id)
	require.NoError(t, err)
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Equal(t, float64(7200), res.Body["reshow_after_seconds"])
	assert.Equal(t, float64(0), res.Body["click_cooldown_seconds"], "a cleared click cooldown is the API's default")
	assert.Equal(t, float64(7200), res.Body["close_cooldown_seconds"], "an empty close cooldown is the reshow interval")
	assert.Equal(t, "2027-03-14T10:30:00Z", res.Body["start_at"], "03:30 PDT")
	targeting := res.Body["targeting"].(map[string]any)
	assert.Equal(t, []any{"qa-device-1", "qa-1"}, targeting["uids"])
	assert.Equal(t, []any{"cn", "us"}, targeting["regions"])

	// shown again in units and in the zone
	assert.Equal(t, []string{"2", "hours"}, []string{b.value("#f-reshow"), b.value("#f-reshow-unit")})
	assert.Equal(t, "2027-03-14T03:30", b.value("#f-start"))
	assert.Contains(t, b.text("#popup-meta"), "America/Los_Angeles")
}

// Finding 8: "Older entries" only while the API has older ones, and [hidden] hides (also Sign
// out on the sign-in screen).
func TestConsoleAuditOlderEntries(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	for i := range 55 {
		in.CreatePopup(t, map[string]any{"name": fmt.Sprintf("audit %02d", i), "status": "draft"})
	}
	b := newBrowser(t, in)
	b.run(chromedp.Navigate(b.origin + "/admin/ui/"))
	b.waitFor(`document.querySelector('#token')`)
	var shown bool
	b.eval(`document.getElementById('signout').getClientRects().length > 0`, &shown)
	assert.False(t, shown, "Sign out is not shown on the sign-in screen")
	b.signIn()

	// every resource: the 55 popups and the operator the service started with
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audit"))
	b.waitFor(`document.querySelectorAll('#audit-list .audit-entry').length === 50`)
	b.run(chromedp.Click("#audit-more", chromedp.ByQuery))
	b.waitFor(`document.querySelectorAll('#audit-list .audit-entry').length === 56 && document.getElementById('audit-more').getClientRects().length === 0`)
	var ids []string
	b.eval(`[...document.querySelectorAll('#audit-list .audit-entry')].map(e => e.dataset.id)`, &ids)
	seen := map[string]bool{}
	for _, id := range ids {
		assert.False(t, seen[id], "entry %s twice", id)
		seen[id] = true
	}

	// a filtered log of one entry: no "Older entries" at all
	b.fill("#a-name", "audit 07")
	b.run(chromedp.Click(`//button[text()="Apply filter"]`, chromedp.BySearch))
	b.waitFor(`document.querySelectorAll('#audit-list .audit-entry').length === 1`)
	b.eval(`document.getElementById('audit-more').getClientRects().length > 0`, &shown)
	assert.False(t, shown, "no older entries: the button is not shown")
	b.axeCheck("audit, one page")
}

// Finding 11: explain for a user among 3,000 popups shows the chosen one and the reasons
// grouped with counts; a group's rows only on demand.
func TestConsoleExplainGroupsReasons(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	const n = 3000
	ps := make([]any, n)
	for i := range ps {
		p := map[string]any{"name": fmt.Sprintf("bulk-%04d", i), "priority": i, "title": fmt.Sprintf("Bulk %d", i)}
		switch i % 3 {
		case 0:
			p["targeting"] = map[string]any{"platforms": []string{"android"}}
		case 1:
			p["targeting"] = map[string]any{"rollout_percent": 0}
		}
		ps[i] = p
	}
	in.Client.Timeout = time.Minute
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/import", map[string]any{"popups": ps})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)

	b := newBrowser(t, in)
	b.signIn()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/explain"))
	b.fill("#x-uid", "u-many")
	b.fill("#x-version", "9.0.0")
	b.run(chromedp.Click("#explain", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#explain-out .verdict')`)
	assert.Contains(t, b.text("#explain-out .verdict"), "bulk-2999")
	var rowsRendered, height int
	b.eval(`document.querySelectorAll('#explain-out tr').length`, &rowsRendered)
	assert.LessOrEqual(t, rowsRendered, 20, "the candidates are not all rendered")
	b.eval(`document.documentElement.scrollHeight`, &height)
	assert.Less(t, height, 2500, "the page stays short")
	assert.Contains(t, b.text(`#explain-out details[data-reason="platform"] summary`), "1000")
	assert.Contains(t, b.text(`#explain-out details[data-reason="rollout"] summary`), "1000")
	assert.Contains(t, b.text(`#explain-out details[data-reason="lower_priority"] summary`), "999")
	b.axeCheck("explain, grouped")
	b.shot("explain-grouped", "")

	b.run(chromedp.Click(`#explain-out details[data-reason="rollout"] summary`, chromedp.ByQuery))
	b.waitFor(`document.querySelectorAll('#explain-out details[data-reason="rollout"] tbody tr').length > 0`)
	var reasons []string
	b.eval(`[...new Set([...document.querySelectorAll('#explain-out details[data-reason="rollout"] td[data-reason]')].map(td => td.dataset.reason))]`, &reasons)
	assert.Equal(t, []string{"rollout"}, reasons)
	b.axeCheck("explain, a group open")
}

// Finding 12: re-applying a filter refreshes the numbers; Save is in view on a short screen;
// nothing scrolls sideways at 390 px.
func TestConsoleListFreshAndSmallScreens(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	id := in.CreatePopup(t, map[string]any{"name": "counted", "status": "active", "title": "Counted", "priority": 1,
		"targeting": map[string]any{"regions": []string{"cn", "us", "de", "fr", "jp"}, "langs": []string{"en", "zh", "de"}}})

	for i := range 8 {
		in.CreatePopup(t, map[string]any{"name": fmt.Sprintf("filler with a rather long name %d", i), "status": "draft",
			"start_at": "2027-03-01T00:00:00Z", "end_at": "2027-03-31T00:00:00Z"})

	}
	b := newBrowser(t, in)
	b.signIn()
	row := `#popup-table tr[data-id="` + apitest.Itoa(id) + `"] td.num`
	var nums []string
	b.eval(`[...document.querySelectorAll('`+row+`')].map(td => td.textContent)`, &nums)
	assert.Equal(t, []string{"1", "0", "—"}, nums)

	// an impression, counted by the worker; the operator re-applies the filter
	got, _ := in.Get(t, "uid=u-1&platform=ios&app_version=9.0.0&region=cn&lang=en")
	require.Equal(t, id, got)
	deadline := time.Now().Add(15 * time.Second)
	for {
		res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id)+"/stats", nil)
		if totals, _ := res.Body["totals"].(map[string]any); totals["impressions"] == 1.0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the worker never counted the impression: %s", res.Raw)
		time.Sleep(200 * time.Millisecond)
	}
	b.run(chromedp.Click(`//button[text()="Apply filter"]`, chromedp.BySearch))
	b.waitFor(`[...document.querySelectorAll('` + row + `')].map(td => td.textContent).join('|') === '1|1|0.0%'`)

	// a short screen: Save is in view without scrolling
	b.run(emulation.SetDeviceMetricsOverride(1280, 600, 1, false))
	b.openPopup(id, 1)
	var inView bool
	b.eval(`(() => { const r = document.getElementById('save').getBoundingClientRect();
		return window.scrollY === 0 && r.top >= 0 && r.bottom <= window.innerHeight; })()`, &inView)
	assert.True(t, inView, "the action bar sticks to the bottom of the viewport")

	// a phone: no sideways scroll on the list or the form
	b.run(emulation.SetDeviceMetricsOverride(390, 800, 2, true))
	for _, screen := range []string{"#/popups", "#/popups/" + apitest.Itoa(id)} {
		b.run(chromedp.Navigate(b.origin + "/admin/ui/" + screen))
		if screen == "#/popups" {
			b.waitFor(`document.querySelector('#popup-results[aria-busy=false] #popup-table')`)
		} else {
			b.waitFor(`document.querySelector('#popup-form')`)
		}
		var width int
		b.eval(`document.documentElement.scrollWidth`, &width)
		assert.LessOrEqual(t, width, 390, "%s scrolls sideways at 390 px", screen)
		if screen == "#/popups" {
			b.axeCheck("list at 390 px")
			assert.True(t, strings.Contains(b.text("#popup-table"), "counted"))
		}
	}
}
