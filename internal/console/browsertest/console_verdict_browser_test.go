package browsertest

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Issue 49, 2: on an experiment decided on purchase where variant a clicks far more and discount
// converts more, the summary sentence, the summary table, the winner box and its reason, and the
// Conclude pre-selection all name discount on purchase, against the goal's baseline (the
// control), in purchase's words; after Conclude the summary says what was shipped, when and by
// whom. (Before, the summary read "“a” is ahead of …" on clicks and the reason asked for clicks.)
func TestConsoleVerdictOnThePrimaryGoal(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "purchase", "name": "Purchase", "value": "sum"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := in.CreatePopup(t, apitest.PopupSpec("verdict", map[string]any{"title": "Own", "image_url": "",
		"experiment": map[string]any{"primary_goal": "purchase",
			"variants": []map[string]any{{"key": "a", "weight": 45, "title": "A"}, {"key": "discount", "weight": 45, "title": "Discount"}},
			"control":  map[string]any{"weight": 10, "mode": "none"}}}))

	res = in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	salt := res.Body["experiment"].(map[string]any)["salt"].(string)
	// a clicks 3 times as often as discount; discount converts 7% against the control's 5% and a's 4%
	phaseCounts(t, cfg.MySQLDSN, id, salt, 20000, 3000, 20000, 1000, 4444)
	insertGoalCounts(t, cfg.MySQLDSN, id, salt, []knownGoal{
		{"a", "purchase", 800, 800, 8000, 80000}, {"discount", "purchase", 1400, 1500, 14000, 140000}, {"control", "purchase", 222, 222, 2220, 22200}})
	got := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/results", nil).Body
	v := got["verdict"].(map[string]any)
	require.Equal(t, "discount", v["winner"], "the verdict is purchase's: %v", v)
	assert.Equal(t, "purchase", v["metric"])
	assert.Equal(t, "control", v["baseline"])
	wantSummary := "“discount” converts 2.0 points more users to Purchase than the control (7.0% against 5.0%, +40%): confident — you can ship it."
	assert.Equal(t, wantSummary, v["summary"])

	b := newBrowser(t, in)
	b.signIn()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id) + "/experiment"))
	b.waitFor(`document.querySelector('#summary') && document.title.startsWith('Experiment results: verdict ')`)
	assert.Equal(t, wantSummary, b.text("#summary"), "the page shows the API's sentence")
	assert.Equal(t, "purchase", b.attr("#summary-table", "data-metric"))
	var cells []string
	b.eval(`[...document.querySelectorAll('#summary-table tr[data-arm="discount"] td')].map(td => td.textContent)`, &cells)
	assert.Equal(t, []string{"20,000", "1,400", "7.00%", "+2.00 points", "+40.13%"}, cells, "the summary table is the verdict's metric against its baseline")
	assert.Contains(t, b.text("#verdict"), "Winner on goal purchase: variant “discount”")
	assert.Contains(t, b.text("#verdict-why"), "the rate of users converting to Purchase from the control")
	assert.NotContains(t, b.text("#verdict-why"), "click")
	assert.Equal(t, "Conclude and ship “discount”…", b.text("#results-conclude"))
	b.axeCheck("results decided on a goal")
	b.run(chromedp.Click("#results-conclude", chromedp.ByQuery))
	b.answerDialogCheck("Conclude", true, func() {
		var checked string
		b.eval(`document.querySelector('#conclude-choice input:checked').value`, &checked)
		assert.Equal(t, "discount", checked, "Conclude offers the verdict's winner")
	})
	b.waitFor(`document.querySelector('#experiment-meta .badge.concluded')`)
	stored := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body
	assert.Equal(t, "Discount", stored["title"], "the better converter's content is shipped")
	summary := b.text("#summary")
	assert.Regexp(t, `^Concluded on \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC by [^:]+: variant “discount” was shipped as the popup's content for every user\. The verdict on Purchase named it`, summary)
	assert.Contains(t, summary, time.Now().UTC().Format(time.DateOnly))
	assert.NotContains(t, summary, "you can ship it", "a concluded experiment is not offered again")
	b.axeCheck("results of a concluded experiment")
}
