package browsertest

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/popup"
)

// The list in campaign states, sorted and counted, kept in the address; the bucketing seed a draft
// carries; results over a range of reporting-zone days with uniques, clicks per button and a CSV of
// what is shown; the settings screen of the admins (issue 22, findings 3, 5, 6 and 7).

// listRows are the ids of the list's rows, in order.
func (b *browser) listRows() []int64 {
	b.t.Helper()
	var ids []int64
	b.eval(`[...document.querySelectorAll('#popup-table tbody tr')].map(tr => Number(tr.dataset.id))`, &ids)
	return ids
}

// waitList waits for the list's render after the address says want (a hash query part).
func (b *browser) waitList(want string) {
	b.t.Helper()
	b.waitFor(`location.hash.includes(` + js(want) + `) && document.querySelector('#popup-results[aria-busy=false]')`)
}

func TestConsoleListStatesSortAndAddress(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	var ids []int64
	for i := range 58 {
		ids = append(ids, in.CreatePopup(t, map[string]any{"name": fmt.Sprintf("filler %02d", i), "status": "draft"}))
	}
	ended := in.CreatePopup(t, map[string]any{"name": "ended sale", "status": "active", "start_at": "2026-01-01T00:00:00Z", "end_at": "2026-02-01T00:00:00Z"})
	scheduled := in.CreatePopup(t, map[string]any{"name": "next spring", "status": "active", "start_at": "2036-03-01T00:00:00Z", "title": "Spring is coming"})
	b := newBrowser(t, in)
	b.signIn()

	// the default view: newest-updated first, so the newest popup is on page 1, with the total
	b.waitFor(`document.querySelector('#popup-table')`)
	rows := b.listRows()
	require.NotEmpty(t, rows)
	assert.Equal(t, scheduled, rows[0], "the popup changed last comes first")
	assert.Contains(t, rows, ended)
	assert.Contains(t, b.text("#popup-total"), "60 popups")
	assert.Equal(t, "descending", b.attr(`#popup-table th[data-sort="updated_at"]`, "aria-sort"))
	assert.Contains(t, b.text(`label[for="filter-q"]`), "name, title, content")

	// each row shows its campaign state
	state := func(id int64) string {
		return b.text(`#popup-table tr[data-id="` + apitest.Itoa(id) + `"] td[data-label="State"]`)
	}
	assert.Equal(t, "ended", state(ended))
	assert.Equal(t, "scheduled", state(scheduled))
	assert.Equal(t, "draft", state(ids[len(ids)-1]))
	b.axeCheck("list with states")
	b.shot("list-states", "")

	// sorted by name: a click on the header; again: descending
	b.run(chromedp.Click(`#popup-table th[data-sort="name"] button`, chromedp.ByQuery))
	b.waitList("sort=name")
	assert.Equal(t, "ascending", b.attr(`#popup-table th[data-sort="name"]`, "aria-sort"))
	assert.Equal(t, ended, b.listRows()[0], "“ended sale” first by name")
	b.run(chromedp.Click(`#popup-table th[data-sort="name"] button`, chromedp.ByQuery))
	b.waitList("sort=-name")
	assert.Equal(t, "descending", b.attr(`#popup-table th[data-sort="name"]`, "aria-sort"))
	assert.Equal(t, scheduled, b.listRows()[0], "next spring last by name")

	// filtered by state: ended, then scheduled
	for _, tt := range []struct {
		state string
		id    int64
	}{{"ended", ended}, {"scheduled", scheduled}} {
		b.fill("#filter-state", tt.state)
		b.waitList("state=" + tt.state)
		assert.Equal(t, []int64{tt.id}, b.listRows(), tt.state)
		assert.Contains(t, b.text("#popup-total"), "1 popup")
	}

	// a reload keeps the filter and the sort; a search of the title too
	b.run(chromedp.Reload())
	b.waitList("state=scheduled")
	assert.Equal(t, "scheduled", b.value("#filter-state"))
	assert.Equal(t, []int64{scheduled}, b.listRows())
	assert.Equal(t, "descending", b.attr(`#popup-table th[data-sort="name"]`, "aria-sort"))
	b.fill("#filter-state", "")
	b.waitList("sort=-name")
	b.fill("#filter-q", "spring is")
	b.run(chromedp.Click(`//button[text()="Apply filter"]`, chromedp.BySearch))
	b.waitList("q=spring")
	assert.Equal(t, []int64{scheduled}, b.listRows(), "the search covers the title")
	b.run(chromedp.Reload())
	b.waitList("q=spring")
	assert.Equal(t, "spring is", b.value("#filter-q"))
	assert.Equal(t, []int64{scheduled}, b.listRows())
}

// draftDecision explains the form's draft (prefix d) or a user on the explain screen (prefix x)
// for uid and tells what popup id gets: "chosen", or the reason of its group.
func (b *browser) decision(prefix, out string, id int64, uid string) string {
	b.t.Helper()
	b.eval(`document.getElementById(`+js(out)+`).replaceChildren() || true`, nil)
	b.fill("#"+prefix+"-uid", uid)
	b.run(chromedp.Click("form:has(#"+prefix+"-uid) button[type=submit]", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#` + out + ` .explain-result, #` + out + ` .alert')`)
	var got string
	b.eval(fmt.Sprintf(`(() => { const o = document.getElementById(%s);
		if (o.querySelector('tr.chosen[data-id="%d"]')) return 'chosen';
		const g = [...o.querySelectorAll('details.reason-group')].map(d => d.dataset.reason);
		return g.join(',') || o.innerText; })()`, js(out), id), &got)
	return got
}

func TestConsoleDraftExplainIsTheSavedAnswer(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	b := newBrowser(t, in)
	b.signIn()
	b.newForm()
	var seed string // the answers below are computed from it
	b.eval(`(document.querySelector('#f-seed') || {value: ''}).value`, &seed)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{16}$`), seed, "a new draft draws its seed when the form opens")
	b.fill("#f-name", "thirty percent")
	b.fill("#f-title", "Thirty")
	b.fill("#f-rollout", "30")
	b.spyWrites()

	// Users on both sides of the 30% line under this draft's seed, eight each: every answer is
	// known exactly (popup.RolloutBucket), so the draft is checked user by user, and each is a
	// round trip through the page, which is what this test's time goes to.
	var users []string
	inRollout := map[string]bool{}
	taken := map[bool]int{}
	for i := 0; len(users) < 16 && i < 1000; i++ {
		u := fmt.Sprintf("user-%d", i)
		if yes := popup.RolloutBucket(seed, u) < 30; taken[yes] < 8 {
			taken[yes]++
			users = append(users, u)
			inRollout[u] = yes
		}
	}
	require.Len(t, users, 16)
	draft := map[string]string{}
	for _, u := range users {
		draft[u] = b.decision("d", "draft-explain-out", 0, u)
		assert.Equal(t, inRollout[u], draft[u] == "chosen", "user %s: the draft's answer (%s) under seed %s", u, draft[u], seed)
	}

	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`/^#\/popups\/\d+$/.test(location.hash) && document.querySelector('#popup-form[data-revision="1"]')`)
	var id int64
	b.eval(`Number(location.hash.split('/')[2])`, &id)
	stored := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)

	// live now (the seed omitted keeps it), explained for each user on the explain screen
	p := stored.Body
	p["status"] = "active"
	res := in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(id), p)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/explain"))
	b.waitFor(`document.querySelector('#x-uid')`)
	for _, u := range users {
		saved := b.decision("x", "explain-out", id, u)
		assert.Equal(t, draft[u], saved, "user %s: the draft's answer is the saved popup's", u)
	}

	// the create sent the draft's seed; the popup shows it, read-only; a duplicate draws a new one
	assert.Equal(t, seed, stored.Body["bucket_seed"], "the create sent the draft's seed")
	b.openPopup(id, 2)
	assert.Equal(t, seed, b.value("#f-seed"), "the saved popup shows its seed")
	var readOnly bool
	b.eval(`document.querySelector('#f-seed').readOnly`, &readOnly)
	assert.True(t, readOnly, "a seed is never edited")
	b.run(chromedp.Click("#duplicate", chromedp.ByQuery))
	b.waitFor(`location.hash === '#/popups/new' && document.querySelector('#popup-form[data-id="new"]')`)
	dup := b.value("#f-seed")
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{16}$`), dup)
	assert.NotEqual(t, seed, dup, "a duplicate buckets its users anew")
	b.axeCheck("new draft with its seed")
}

func TestConsoleResultsRangeZoneButtonsCSV(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	id := in.CreatePopup(t, map[string]any{"name": "results", "status": "active", "title": "Results",
		"buttons": []map[string]any{{"text": "Yes", "link_url": "app://yes"}, {"text": "No", "link_url": "app://no"}}})

	for _, uid := range []string{"r1", "r2", "r3", "r4"} {
		got, _ := in.Get(t, "uid="+uid+"&platform=ios&app_version=1")
		require.Equal(t, id, got)
	}
	for _, a := range []string{`{"uid":"r1","action":"click","button":0}`, `{"uid":"r2","action":"click","button":1}`,
		`{"uid":"r3","action":"click"}`, `{"uid":"r4","action":"close"}`} {
		res := in.Action(t, id, a)
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	}
	res := in.AdminDo(t, http.MethodPut, "/admin/v1/settings", map[string]any{"reporting_time_zone": "America/Los_Angeles"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	path := "/admin/v1/popups/" + apitest.Itoa(id) + "/stats"
	deadline := time.Now().Add(15 * time.Second)
	for {
		res = in.AdminDo(t, http.MethodGet, path, nil)
		if totals, _ := res.Body["totals"].(map[string]any); totals["clicks"] == 3.0 && totals["closes"] == 1.0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the worker never counted the actions: %s", res.Raw)
		time.Sleep(200 * time.Millisecond)
	}
	la, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	today := time.Now().In(la)

	b := newBrowser(t, in) // its own zone is Asia/Shanghai: the days are the reporting zone's
	b.signIn()
	b.openPopup(id, 1)
	b.waitFor(`document.querySelector('#results-table')`)
	assert.Contains(t, b.text("#results-zone"), "Days in America/Los_Angeles")
	assert.Equal(t, today.Format(time.DateOnly), b.value("#results-to"), "today is Los Angeles' today")
	assert.Equal(t, today.AddDate(0, 0, -13).Format(time.DateOnly), b.value("#results-from"))

	table := func() [][]string {
		var rows [][]string
		b.eval(`[...document.querySelectorAll('#results-table thead tr, #results-table tbody tr, #results-table tfoot tr')]
			.map(tr => [...tr.children].map(c => c.dataset.csv ?? c.textContent))`, &rows)
		return rows
	}
	rows := table()
	require.Len(t, rows, 1+14+1, "header, 14 days, totals")
	assert.Equal(t, []string{"Date", "Impressions", "Unique users", "Clicks", "Closes", "CTR", "Close rate", "Clicks: Yes", "Clicks: No", "Clicks: unspecified", "Complete"}, rows[0])
	assert.Equal(t, today.Format(time.DateOnly), rows[1][0], "newest day first")
	assert.Equal(t, []string{"4", "4", "3", "1"}, rows[15][1:5], "totals: impressions, users, clicks, closes")
	assert.Equal(t, []string{"1", "1", "1"}, rows[15][7:10], "clicks per button: Yes, No, unspecified")
	b.axeCheck("results")
	b.shot("results", "#results")

	// a preset: the last 7 days of the reporting zone, asked for as such
	b.run(chromedp.Click(`#results button[data-days="7"]`, chromedp.ByQuery))
	b.waitFor(`document.querySelectorAll('#results-table tbody tr').length === 7`)
	assert.Equal(t, today.AddDate(0, 0, -6).Format(time.DateOnly), b.value("#results-from"))
	api := in.AdminDo(t, http.MethodGet, path+"?from="+b.value("#results-from")+"&to="+b.value("#results-to"), nil)
	require.Equal(t, http.StatusOK, api.Status, api.Raw)
	assert.Equal(t, "America/Los_Angeles", api.Body["time_zone"])
	var apiDates []string
	for _, d := range api.Body["days"].([]any) {
		apiDates = append([]string{d.(map[string]any)["date"].(string)}, apiDates...)
	}
	rows = table()
	var shownDates []string
	for _, r := range rows[1 : len(rows)-1] {
		shownDates = append(shownDates, r[0])
	}
	assert.Equal(t, apiDates, shownDates, "the page's days are the API's for the zone")

	// the CSV download is what the table shows
	b.run(cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorDeny).
		WithBrowserContextID(chromedp.FromContext(b.ctx).BrowserContextID)) // the test's own context
	b.eval(`(() => { window.__blobs = []; const o = URL.createObjectURL; URL.createObjectURL = (x) => { window.__blobs.push(x); return o.call(URL, x); }; return true; })()`, nil)
	b.run(chromedp.Click("#results-csv", chromedp.ByQuery))
	b.waitFor(`window.__blobs.length === 1`)
	var raw string
	b.eval(`window.__blobs[0].text()`, &raw)
	records, err := csv.NewReader(strings.NewReader(raw)).ReadAll()
	require.NoError(t, err, raw)
	var locales []string
	b.eval(`[...document.querySelectorAll('#results-locales tbody th')].map(th => th.dataset.csv)`, &locales)
	require.Len(t, records, len(rows)+len(locales), raw)
	// the CSV's header names the columns its way; the days come oldest first, then the total
	shown := append([][]string{}, rows[1:len(rows)-1]...)
	for i, j := 0, len(shown)-1; i < j; i, j = i+1, j-1 {
		shown[i], shown[j] = shown[j], shown[i]
	}
	shown = append(shown, rows[len(rows)-1])
	for i, r := range shown {
		rec := records[i+1]
		assert.Equal(t, rec[0], r[0], "date")
		assert.Equal(t, rec[1:5], r[1:5], "%s: impressions, users, clicks, closes", rec[0])
		assert.Equal(t, rec[7:], r[7:], "%s: clicks per button and complete", rec[0])
	}
	assert.Equal(t, "total", records[len(rows)-1][0])
	var csvLocales []string
	for _, rec := range records[len(rows):] {
		csvLocales = append(csvLocales, rec[0])
	}
	assert.Equal(t, []string{"locale: default", "locale: unknown"}, locales, "clicks without a decision id: no locale known")
	assert.Equal(t, locales, csvLocales, "then the rows per locale the page shows")
}

func TestConsoleSettingsForAdminsOnly(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	b := newBrowser(t, in)
	b.signInAs(apitest.RoleTokens["admin"], "admin")
	b.waitFor(`document.querySelector('nav a[data-nav="settings"]')`)
	b.run(chromedp.Click(`nav a[data-nav="settings"]`, chromedp.ByQuery))
	b.waitFor(`document.querySelector('#reporting-zone') && document.querySelector('#reporting-zone').value === 'UTC'`)

	b.fill("#reporting-zone", "Mars/Olympus_Mons")
	b.run(chromedp.Click("#settings-save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#reporting-zone-err')`)
	assert.Contains(t, b.text("#reporting-zone-err"), "IANA time zone")
	assert.Equal(t, "true", b.attr("#reporting-zone", "aria-invalid"))
	assert.Contains(t, b.attr("#reporting-zone", "aria-describedby"), "reporting-zone-err")
	b.axeCheck("settings with an error")

	b.fill("#reporting-zone", "America/Los_Angeles")
	b.run(chromedp.Click("#settings-save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#settings-out .alert.info')`)
	assert.False(t, b.offered("#reporting-zone-err")["#reporting-zone-err"], "the error is gone")
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/settings", nil)
	assert.Equal(t, "America/Los_Angeles", res.Body["reporting_time_zone"])
	b.axeCheck("settings")
	b.shot("settings", "")

	e := b.newTab()
	e.signInAs(apitest.RoleTokens["editor"], "ed")
	assert.Equal(t, map[string]bool{`nav a[data-nav="settings"]`: false}, e.offered(`nav a[data-nav="settings"]`))
	e.run(chromedp.Navigate(e.origin + "/admin/ui/#/settings"))
	e.waitFor(`document.querySelector('#readonly-note')`)
	assert.Contains(t, e.text("#readonly-note"), "admin")
	assert.Contains(t, e.text("main"), "America/Los_Angeles", "the current zone is shown")
	assert.Equal(t, map[string]bool{"#settings-save": false}, e.offered("#settings-save"))
	e.run(page.BringToFront())
	e.axeCheck("settings, read-only")
}
