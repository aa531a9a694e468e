package browsertest

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Words a marketer knows (issue 53): no raw codes, patterns or engineers' terms on the screens an
// operator uses alone; time spans in minutes, hours and days.

// rawTerms are words of the API and of engineers that no screen shows as they are.
var rawTerms = []string{"min_gap", "daily_cap", "config version", "[A-Za-z0-9", "BCP 47", "make up", "_seconds", "Bonferroni", "(none) → ", "{}"}

func (b *browser) assertNoRawTerms(where string) {
	b.t.Helper()
	var text string
	b.eval(`document.querySelector('main').innerText + ' ' + (document.getElementById('confirm').open ? document.getElementById('confirm').innerText : '')`, &text)
	for _, term := range rawTerms {
		assert.NotContains(b.t, text, term, "%s shows %q", where, term)
	}
}

func TestConsoleSpeaksAMarketersWords(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	b := newBrowser(t, in)

	// sign-in help: no developer command
	b.run(chromedp.Navigate(b.origin + "/admin/ui/"))
	b.waitFor(`document.querySelector('#token-help')`)
	b.assertNoRawTerms("sign-in")
	b.signInAs(apitest.RoleTokens["admin"], "admin")

	// settings: the gap as a duration with a unit, said in minutes; ending the holdout is titled so
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/settings"))
	b.waitFor(`document.querySelector('#min-gap') && document.querySelector('#min-gap-unit')`)
	b.assertNoRawTerms("settings")
	b.fill("#min-gap", "90")
	b.fill("#min-gap-unit", "minutes")
	b.fill("#holdout-percent", "5")
	b.run(chromedp.Click("#settings-save", chromedp.ByQuery))
	b.answerDialog("Start the holdout", true)
	b.waitFor(`document.querySelector('#settings-out .alert.info')`)
	assert.Contains(t, b.text("#settings-out"), "at least 1 hour 30 minutes between two popups")
	b.fill("#holdout-percent", "0")
	b.run(chromedp.Click("#settings-save", chromedp.ByQuery))
	b.answerDialogCheck("End the holdout", false, func() {
		assert.Contains(t, b.text("#confirm-ok"), "end")
		b.axeCheck("ending the holdout")
	})

	// a popup's field errors and the review of a change say fields and spans in words
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups", map[string]any{"name": "words", "status": "active", "title": "Hi", "translations": map[string]any{}})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := int64(res.Body["id"].(float64))
	b.openPopup(id, 1)
	b.assertNoRawTerms("the popup form")
	b.fill("#f-uids", "qa 1")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#form-errors .alert.error')`)
	assert.Contains(t, b.text("#form-errors"), "letters, digits or _ . : -")
	b.assertNoRawTerms("a refused save")
	b.fill("#f-uids", "")
	b.fill("#f-reshow", "2")
	b.fill("#f-reshow-unit", "hours")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish", false, func() {
		var rows [][]string
		b.eval(`[...document.querySelectorAll('#confirm-body table.diff tbody tr')].map(tr => [...tr.children].map(c => c.textContent))`, &rows)
		assert.Equal(t, [][]string{{"show again after", "1 day", "2 hours"}}, rows)
		b.assertNoRawTerms("the publish review")
	})

	// explain: no configuration counter, every reason in words
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/explain"))
	b.answerDialog("unsaved", true)
	b.waitFor(`document.querySelector('#x-uid')`)
	b.fill("#x-uid", "u-1")
	b.fill("#x-version", "9.0.0")
	b.run(chromedp.Click("#explain", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#explain-out .verdict')`)
	b.assertNoRawTerms("explain")
	b.axeCheck("explain in words")
}
