package browsertest

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Results that fit (issue 53): an experiment shows its primary goal and the goals with data, not
// every goal of the team; its tables fit at 1366 px and on a phone, with no header broken inside a
// word; on a phone the main menu is folded, so the first screen is the page's.

// brokenWords lists the header words, of the tables on show (not folded in a closed details), that wrap inside the word: each word
// of a header's text must sit on one line.
const brokenWords = `[...document.querySelectorAll('main table')].filter(t => t.offsetParent !== null && !t.closest('details:not([open])'))
	.flatMap(t => [...t.querySelectorAll('thead th, tbody th')]).flatMap(th => {
		const out = [];
		const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			for (const m of n.textContent.matchAll(/\S+/g)) {
				const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
				const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
				if (lines.size > 1) out.push(m[0]);
			}
		}
		return out;
	})`

// overflowing lists the tables on show that are wider than their box (a sideways scroll).
const overflowing = `[...document.querySelectorAll('main table')].filter(t => t.offsetParent !== null && !t.closest('details:not([open])'))
	.filter(t => t.getBoundingClientRect().right > window.innerWidth + 1 || (t.parentElement.scrollWidth > t.parentElement.clientWidth + 1))
	.map(t => t.id || t.querySelector('caption')?.textContent)`

func TestConsoleResultsFitTheScreen(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	for _, g := range []map[string]any{{"key": "purchase", "name": "Purchase", "value": "sum"}, {"key": "signup", "name": "Sign-up"}, {"key": "newsletter", "name": "Newsletter"}} {
		res := in.AdminDo(t, http.MethodPost, "/admin/v1/goals", g)
		require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	}
	id := in.CreatePopup(t, map[string]any{"name": "fits", "status": "active", "title": "Own", "experiment": map[string]any{
		"primary_goal": "purchase", "control": map[string]any{"weight": 20, "mode": "none"},
		"variants": []map[string]any{{"key": "a", "weight": 40, "title": "A"}, {"key": "b", "weight": 40, "title": "B"}}}})

	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	salt := res.Body["experiment"].(map[string]any)["salt"].(string)
	today := time.Now().UTC().Format(time.DateOnly)
	insertExperimentDays(t, cfg.MySQLDSN, id, salt, []knownDay{
		{"a", today, 2000, 2300, 100, 120, 400}, {"b", today, 2000, 2250, 110, 130, 380}, {"control", today, 1000, 1000, 0, 0, 0},
	})
	insertGoalCounts(t, cfg.MySQLDSN, id, salt, []knownGoal{
		{"a", "purchase", 70, 75, 2100, 70000}, {"b", "purchase", 130, 140, 4100, 140000}, {"control", "purchase", 40, 41, 1150, 36000},
		{"a", "signup", 200, 200, 0, 0}, {"b", "signup", 190, 190, 0, 0}, {"control", "signup", 95, 95, 0, 0},
	})

	b := newBrowser(t, in)
	b.signIn()
	b.run(emulation.SetDeviceMetricsOverride(1366, 900, 1, false))
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id) + "/experiment"))
	b.waitFor(`document.querySelector('#goal-table-purchase') && document.querySelector('#summary-table')`)
	assert.True(t, b.has("#goal-table-signup"), "a goal with data is shown")
	assert.False(t, b.has("#goal-table-newsletter"), "a goal without a conversion is not a table of zeros")
	var quiet string
	b.eval(`(document.querySelector('#goals-quiet') || {}).textContent || ''`, &quiet)
	assert.Contains(t, quiet, "newsletter", "the goals without data are named")
	assert.NotContains(t, b.text("main"), "Bonferroni", "the statistics words stay in the details, folded")

	for _, width := range []int64{1366, 390} {
		if width == 390 {
			b.run(emulation.SetDeviceMetricsOverride(390, 844, 2, true))
		}
		var wide, broken []string
		b.eval(overflowing, &wide)
		assert.Empty(t, wide, "tables wider than the screen at %d px", width)
		b.eval(brokenWords, &broken)
		assert.Empty(t, broken, "header words broken inside the word at %d px", width)
		var scroll int64
		b.eval(`document.documentElement.scrollWidth`, &scroll)
		assert.LessOrEqual(t, scroll, width, "the page scrolls sideways at %d px", width)
		b.axeCheck("experiment results at " + apitest.Itoa(width) + " px")
	}
	b.shot("experiment-results-goals-phone", "#goals")

	// a phone: the main menu is folded behind one button, the page's first screen is the page's
	var header, screenH float64
	b.eval(`document.querySelector('header.top').getBoundingClientRect().height`, &header)
	b.eval(`window.innerHeight`, &screenH)
	assert.Less(t, header/screenH, 0.12, "the header takes %.0f of %.0f px", header, screenH)
	b.run(chromedp.Click("#menu-toggle", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#nav a[data-nav="goals"]').offsetParent !== null && document.getElementById('menu-toggle').getAttribute('aria-expanded') === 'true'`)
	b.axeCheck("the main menu unfolded on a phone")
	b.run(chromedp.Click(`#nav a[data-nav="holdout"]`, chromedp.ByQuery))
	b.waitFor(`location.hash.startsWith('#/holdout') && document.getElementById('menu-toggle').getAttribute('aria-expanded') === 'false'`)
	b.run(emulation.SetDeviceMetricsOverride(1366, 900, 1, false))
}
