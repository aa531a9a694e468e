package browsertest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The console's Audiences page (issue 34) and the audience pickers of the popup form, in a real
// Chromium against a real popup-api on MariaDB and Redis: an operator creates an audience,
// uploads its members from a file, sees a bad line named by its number with nothing changed,
// checks a uid, targets a popup at the audience, and a viewer is offered no upload.

// memberFile writes a member upload of the test's own and returns its path.
func memberFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// uploadMembers picks path in the upload form, the mode (replace, add, remove), and sends it.
func (b *browser) uploadMembers(path, mode string) {
	b.t.Helper()
	b.run(chromedp.SetUploadFiles("#upload-file", []string{path}, chromedp.ByQuery),
		chromedp.Click("#upload-mode-"+mode, chromedp.ByQuery),
		chromedp.Click("#upload-submit", chromedp.ByQuery))
}

// openAudience opens an audience's page and waits for its facts.
func (b *browser) openAudience(id string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audiences/" + id))
	b.waitFor(`document.querySelector('#audience-meta #audience-version') && location.hash === ` + js("#/audiences/"+id))
}

func TestConsoleAudienceUploadCheckAndTarget(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	b := newBrowser(t, in)
	b.signIn()

	// create, from the list page reached by the menu
	b.run(chromedp.Click(`nav a[data-nav="audiences"]`, chromedp.ByQuery))
	b.waitFor(`document.querySelector('#audience-create') && document.querySelector('#audience-results[aria-busy=false]')`)
	b.fill("#new-aud-name", "VIPs")
	b.fill("#new-aud-description", "Top spenders, from the CRM")
	b.run(chromedp.Click("#audience-create-submit", chromedp.ByQuery))
	b.waitFor(`/^#\/audiences\/\d+$/.test(location.hash) && document.querySelector('#audience-size')`)
	var id string
	b.eval(`location.hash.split('/')[2]`, &id)
	assert.Equal(t, "Audience: VIPs", b.text("#page-title"))
	assert.Equal(t, "0", b.text("#audience-size"))
	created := b.text("#audience-version")

	// a small file replaces the (empty) list: the bar went to the file's bytes, then the ids read
	b.uploadMembers(memberFile(t, "vips.txt", "u1\nu2\nu3\n"), "replace")
	b.waitFor(`document.querySelector('#upload-result')`)
	assert.Equal(t, "3", b.text("#audience-size"))
	version := b.text("#audience-version")
	assert.NotEqual(t, created, version, "the upload made a new version")
	var bar struct{ Value, Max float64 }
	b.eval(`(() => { const p = document.querySelector('#upload-progress'); return {value: p.value, max: p.max}; })()`, &bar)
	assert.Equal(t, float64(len("u1\nu2\nu3\n")), bar.Max, "the bar counts the file's bytes")
	assert.Equal(t, bar.Max, bar.Value, "all of them sent")
	assert.Contains(t, b.text("#upload-status"), "Read 3 ids")
	assert.Contains(t, b.text("#upload-result"), "3 added")
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/audiences/"+id, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, float64(3), res.Body["size"])
	assert.Equal(t, version, fmt.Sprint(res.Body["version"]))

	// a file with a bad line: the line is named by its number, and nothing changes
	b.uploadMembers(memberFile(t, "more.txt", "u4\nnot a uid!\nu5\n"), "add")
	b.waitFor(`document.querySelector('#upload-error')`)
	assert.Contains(t, b.text("#upload-error"), "Nothing was changed")
	assert.Contains(t, b.text(`#upload-bad-lines li[data-line="2"]`), "Line 2")
	var badLines int
	b.eval(`document.querySelectorAll('#upload-bad-lines li').length`, &badLines)
	assert.Equal(t, 1, badLines, "only line 2 is bad")
	var invalid string
	b.eval(`document.querySelector('#upload-file').getAttribute('aria-invalid')`, &invalid)
	assert.Equal(t, "true", invalid)
	assert.Equal(t, "3", b.text("#audience-size"))
	assert.Equal(t, version, b.text("#audience-version"))
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/audiences/"+id, nil)
	assert.Equal(t, float64(3), res.Body["size"], "nothing was written")
	assert.Equal(t, version, fmt.Sprint(res.Body["version"]))
	b.axeCheck("audience with a refused upload")
	b.shot("audience-upload-refused", "#upload-h")

	// changed behind the page's back: the upload is refused (412), nothing changes, and a reload
	// shows the newer version
	res = in.AdminDo(t, http.MethodPut, "/admin/v1/audiences/"+id, map[string]any{"name": "VIPs", "description": "Changed elsewhere"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	uploaded, newer := version, fmt.Sprint(res.Body["version"])
	b.uploadMembers(memberFile(t, "late.txt", "u9\n"), "add")
	b.waitFor(`document.querySelector('#audience-stale')`)
	assert.Contains(t, b.text("#audience-stale"), "changed by someone else")
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/audiences/"+id, nil)
	assert.Equal(t, float64(3), res.Body["size"], "nothing was written")
	b.run(chromedp.Click("#audience-reload", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#audience-version') && document.querySelector('#audience-version').textContent === ` + js(newer))
	version = newer

	// check a uid: a member, and one that is not, at the version they were read
	b.fill("#check-uid", "u2")
	b.run(chromedp.Click("#check-submit", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#check-result')`)
	assert.Equal(t, "u2 is a member of “VIPs” at version "+version+".", b.text("#check-result"))
	b.fill("#check-uid", "u4")
	b.run(chromedp.Click("#check-submit", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#check-result').textContent.startsWith('u4')`)
	assert.Contains(t, b.text("#check-result"), "u4 is not a member")

	// the member list comes back as a file of its members
	b.run(chromedp.Click("#download-members", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#download-out').textContent.startsWith('Downloaded')`)
	assert.Contains(t, b.text("#download-out"), "(9 B)", "u1, u2 and u3, a line each")

	// the history has the create, the upload and the change made elsewhere
	b.waitFor(`document.querySelectorAll('#audience-history-table tbody tr').length >= 3`)
	assert.Contains(t, b.text(`#audience-history-table tr[data-version="`+uploaded+`"]`), "members replaced")
	assert.Contains(t, b.text(`#audience-history-table tr[data-version="`+newer+`"]`), "name or description changed")

	// a new description, saved against the version on show
	b.fill("#aud-description", "Top spenders, from the CRM")
	b.run(chromedp.Click("#audience-save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#audience-description') && document.querySelector('#audience-description').textContent === 'Top spenders, from the CRM'`)
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/audiences/"+id, nil)
	assert.Equal(t, "Top spenders, from the CRM", res.Body["description"])
	version = fmt.Sprint(res.Body["version"])
	assert.Equal(t, version, b.text("#audience-version"))

	// the list shows its size and version
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audiences"))
	b.waitFor(`document.querySelector('#audience-table tbody tr[data-id="` + id + `"]')`)
	row := `#audience-table tbody tr[data-id="` + id + `"] `
	assert.Equal(t, "3", b.text(row+`td[data-col=size]`))
	assert.Equal(t, version, b.text(row+`td[data-col=version]`))
	assert.Equal(t, "no popup", b.text(row+`td[data-col=used-by]`))
	b.axeCheck("audiences list")

	// a popup targeted at the audience through the form's include list
	b.newForm()
	b.fill("#f-name", "for VIPs")
	b.fill("#f-title", "Hello VIPs")
	b.run(chromedp.Click("#aud-include-"+id, chromedp.ByQuery))
	assert.Equal(t, "Create draft", b.text("#save"))
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="1"]')`)
	var popupID string
	b.eval(`document.querySelector('#popup-form').dataset.id`, &popupID)
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+popupID, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	targeting, _ := res.Body["targeting"].(map[string]any)
	aud, _ := targeting["audiences"].(map[string]any)
	assert.Equal(t, []any{wireID(id)}, aud["include"], res.Raw)
	var checked bool
	b.eval(`document.querySelector('#aud-include-`+id+`').checked`, &checked)
	assert.True(t, checked, "the saved popup shows its audience checked")
	b.axeCheck("popup form with audiences")

	// the popup list says whom it targets; the audience says who uses it
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups"))
	b.waitFor(`document.querySelector('#popup-table tr[data-id="` + popupID + `"]')`)
	assert.Contains(t, b.text(`#popup-table tr[data-id="`+popupID+`"] td[data-label=Targeting]`), "in “VIPs”")
	b.openAudience(id)
	b.waitFor(`document.querySelector('#audience-used-by a[href="#/popups/` + popupID + `"]')`)
	assert.Contains(t, b.text("#audience-used-by"), "for VIPs")
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audiences"))
	b.waitFor(`document.querySelector('#audience-table td[data-col=used-by] a[href="#/popups/` + popupID + `"]')`)
	b.shot("audiences", "")
}

// A popup field error about an audience lands at its box, as other fields' errors do.
func TestConsoleAudienceFieldErrorAtItsBox(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/audiences", map[string]any{"name": "Churned"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := fmt.Sprint(res.Body["id"])
	b := newBrowser(t, in)
	b.signIn()
	b.newForm()
	b.fill("#f-name", "gone audience")
	b.run(chromedp.Click("#aud-exclude-"+id, chromedp.ByQuery))
	// deleted behind the form's back: the save names targeting.audiences.exclude[0]
	res = in.AdminDo(t, http.MethodDelete, "/admin/v1/audiences/"+id, nil)
	require.Less(t, res.Status, 300, res.Raw)
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#aud-exclude-` + id + `[aria-invalid=true]')`)
	var described string
	b.eval(`document.querySelector('#aud-exclude-`+id+`').getAttribute('aria-describedby')`, &described)
	assert.Contains(t, described, "-err")
	assert.Contains(t, b.text("#form-errors"), "targeting › audiences › exclude 1")
}

// A viewer reads audiences but is offered no create, upload, edit or delete, and is told why.
func TestConsoleAudienceViewerSeesNoUpload(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/audiences", map[string]any{"name": "VIPs"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := fmt.Sprint(res.Body["id"])
	res = in.Do(t, http.MethodPut, "http://"+in.Admin+"/admin/v1/audiences/"+id+"/members", "u1\nu2\n",
		map[string]string{"Authorization": "Bearer " + apitest.Token, "Content-Type": "text/plain"})

	require.Equal(t, http.StatusOK, res.Status, res.Raw)

	listSels := []string{"#audience-create"}
	pageSels := []string{"#audience-upload", "#upload-file", "#audience-edit", "#audience-delete", "#check-uid", "#download-members", "#readonly-note"}
	tests := []struct {
		role, operator string
		list, page     map[string]bool
	}{
		{
			role: "viewer", operator: "vera",
			list: want(listSels),
			page: want(pageSels, "#check-uid", "#download-members", "#readonly-note"),
		},
		{
			role: "editor", operator: "ed", // no live popup uses the audience: the editor may change it
			list: want(listSels, "#audience-create"),
			page: want(pageSels, "#audience-upload", "#upload-file", "#audience-edit", "#check-uid", "#download-members"),
		},
		{
			role: "publisher", operator: "pat",
			list: want(listSels, "#audience-create"),
			page: want(pageSels, "#audience-upload", "#upload-file", "#audience-edit", "#audience-delete", "#check-uid", "#download-members"),
		},
	}
	first := newBrowser(t, in)
	for i, tt := range tests {
		b := first
		if i > 0 {
			b = first.newTab()
		}
		b.signInAs(apitest.RoleTokens[tt.role], tt.operator)
		b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audiences"))
		b.waitFor(`document.querySelector('#audience-table tbody tr')`)
		assert.Equal(t, tt.list, b.offered(listSels...), "%s: the list", tt.role)
		b.openAudience(id)
		assert.Equal(t, tt.page, b.offered(pageSels...), "%s: an audience", tt.role)
		if tt.role == "viewer" {
			note := b.text("#readonly-note")
			assert.Contains(t, note, "viewer")
			assert.Contains(t, note, "editor role", "the note says who may change it")
			// reading stays open to a viewer
			b.fill("#check-uid", "u1")
			b.run(chromedp.Click("#check-submit", chromedp.ByQuery))
			b.waitFor(`document.querySelector('#check-result')`)
			assert.True(t, strings.HasPrefix(b.text("#check-result"), "u1 is a member"))
			b.axeCheck("audience, read-only")
		}
	}
}

// wireID is how an audience id from the page's address reads in a decoded JSON answer.
func wireID(id string) any {
	var n float64
	if _, err := fmt.Sscan(id, &n); err == nil {
		return n
	}
	return id
}

// An audience a live popup uses: an editor sees it read-only and is told the publisher role may
// change it; a publisher's delete is refused (409) and the page names the popup.
func TestConsoleAudienceInUse(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/audiences", map[string]any{"name": "Churned"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := fmt.Sprint(res.Body["id"])
	popupID := in.CreatePopup(t, map[string]any{"name": "win-back", "status": "active", "title": "Come back",
		"targeting": map[string]any{"audiences": map[string]any{"include": []any{res.Body["id"]}}}})

	ed := newBrowser(t, in)
	ed.signInAs(apitest.RoleTokens["editor"], "ed")
	ed.openAudience(id)
	ed.waitFor(`document.querySelector('#audience-used-by a[href="#/popups/` + apitest.Itoa(popupID) + `"]')`)
	assert.Equal(t, map[string]bool{"#audience-upload": false, "#audience-edit": false, "#audience-delete": false, "#readonly-note": true},
		ed.offered("#audience-upload", "#audience-edit", "#audience-delete", "#readonly-note"))
	assert.Contains(t, ed.text("#readonly-note"), "publisher role")

	pat := ed.newTab()
	pat.signInAs(apitest.RoleTokens["publisher"], "pat")
	pat.openAudience(id)
	pat.run(chromedp.Click("#audience-delete", chromedp.ByQuery))
	pat.answerDialog("Delete", true)
	pat.waitFor(`document.querySelector('#delete-error')`)
	assert.Contains(t, pat.text("#delete-error"), "live popups use")
	assert.Contains(t, pat.text(`#delete-error a[href="#/popups/`+apitest.Itoa(popupID)+`"]`), "win-back")
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/audiences/"+id, nil)
	assert.Equal(t, http.StatusOK, res.Status, "not deleted")
	pat.axeCheck("audience delete refused")
}

// Explain says an audience reason in plain words, naming the audience, once the instance holds
// the audiences' sets.
func TestConsoleAudienceReasonsInExplain(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	audience := func(name, members string) any {
		res := in.AdminDo(t, http.MethodPost, "/admin/v1/audiences", map[string]any{"name": name})
		require.Equal(t, http.StatusCreated, res.Status, res.Raw)
		id := res.Body["id"]
		res = in.Do(t, http.MethodPut, "http://"+in.Admin+"/admin/v1/audiences/"+fmt.Sprint(id)+"/members", members,
			map[string]string{"Authorization": "Bearer " + apitest.Token, "Content-Type": "text/plain"})

		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		return id
	}
	vips, churned := audience("VIPs", "u1\n"), audience("Churned", "u2\n")
	vipOffer := in.CreatePopup(t, map[string]any{"name": "vip offer", "status": "active", "title": "For VIPs",
		"targeting": map[string]any{"audiences": map[string]any{"include": []any{vips}}}})

	stay := in.CreatePopup(t, map[string]any{"name": "stay with us", "status": "active", "title": "Hello",
		"targeting": map[string]any{"audiences": map[string]any{"exclude": []any{churned}}}})

	require.Eventually(t, func() bool {
		return strings.Contains(in.Metrics(t), "popup_audience_unbound_popups 0")
	}, 10*time.Second, 20*time.Millisecond, "the instance loads both audiences")

	b := newBrowser(t, in)
	b.signIn()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/explain"))
	b.fill("#x-uid", "u2")
	b.run(chromedp.Click("#explain", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#explain-out .explain-result')`)
	// every group opened: its rows are rendered
	b.eval(`(document.querySelectorAll('#explain-out details.reason-group').forEach(d => { d.open = true; }), true)`, nil)
	tests := []struct {
		popup int64
		want  string
	}{
		{popup: vipOffer, want: "not in audience “VIPs”"},
		{popup: stay, want: "in excluded audience “Churned”"},
	}
	for _, tt := range tests {
		cell := `#explain-out tr[data-id="` + apitest.Itoa(tt.popup) + `"] td[data-reason]`
		b.waitFor(`document.querySelector(` + js(cell) + `)`)
		assert.Equal(t, tt.want, b.text(cell))
	}
	b.axeCheck("explain with audience reasons")
}
