package browsertest

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/popup"
)

// Running an experiment to a decision in the console (issue 41): what explain and the previews
// say a user in an arm gets, the reviews of the transitions and of a change to a concluded
// experiment's content, the phases' verdicts, the results a marketer acts on, and finding and
// auditing experiments.

// explainUser runs "Explain for a user" for uid and returns the verdict once shown.
func (b *browser) explainUser(uid string) string {
	b.t.Helper()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/explain"))
	b.fill("#x-uid", uid)
	b.fill("#x-version", "9.0.0")
	b.run(chromedp.Click("#explain", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#explain-out .verdict')`)
	return b.text("#explain-out .verdict")
}

// Issue 41, 1: explain and the draft preview name the arm and show what the public API answers: a
// control user of mode none gets nothing (no phone drawn), of fall_through the next popup, a
// variant user the variant.
func TestConsoleExplainNamesTheArm(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"none", "fall_through"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			in := apitest.Start(t, apitest.Config(t), nil)
			id, fallback, e := in.StartedExperiment(t, mode)
			users := apitest.ArmUsers(t, e, "ux-", 1)
			control, discount := users[2][0], users[1][0]
			b := newBrowser(t, in)
			b.signIn()

			verdict := b.explainUser(control)
			assert.Equal(t, "control", b.attr("#explain-out .verdict", "data-arm"))
			assert.Contains(t, verdict, "control group of popup #"+apitest.Itoa(id)+" own")
			if mode == "none" {
				assert.Contains(t, verdict, "the app gets no popup")
				assert.False(t, b.has("#explain-out .preview"), "nothing is drawn on the phone for a control user who gets nothing")
			} else {
				assert.Contains(t, verdict, "falls through: the app gets popup #"+apitest.Itoa(fallback)+" fallback “Fallback”")
				assert.Equal(t, "Fallback", b.text("#explain-out .preview .pv-title"))
			}
			b.axeCheck("explain for a control user")
			if mode == "none" {
				b.shot("explain-control", "")
			}

			verdict = b.explainUser(discount)
			assert.Contains(t, verdict, "popup #"+apitest.Itoa(id)+" own “Discount”, variant “discount” of its experiment")
			assert.Equal(t, "Discount", b.text("#explain-out .preview .pv-title"))

			// the edit page's "Try the draft on a user" answers the same
			b.openPopup(id, 2)
			b.fill("#d-uid", control)
			b.fill("#d-version", "9.0.0")
			b.run(chromedp.Click(`//button[text()="Explain this draft for the user"]`, chromedp.BySearch))
			b.waitFor(`document.querySelector('#draft-explain-out .verdict')`)
			assert.Equal(t, "control", b.attr("#draft-explain-out .verdict", "data-arm"))
			if mode == "none" {
				assert.Contains(t, b.text("#draft-explain-out .verdict"), "the app gets no popup")
				assert.False(t, b.has("#draft-explain-out .preview"))
			} else {
				assert.Contains(t, b.text("#draft-explain-out .verdict"), "the app gets popup #"+apitest.Itoa(fallback))
			}
			_, served := in.Get(t, "uid="+control+"&platform=ios&app_version=9.0.0")
			if mode == "none" {
				assert.Nil(t, served.Body["popup"], "the public API agrees: nothing")
			} else {
				assert.Equal(t, float64(fallback), served.Body["popup"].(map[string]any)["id"], "the public API agrees: the fallback")
			}
		})
	}
}

// Issue 41, 2: rolling back past a conclude changes the shipped content: the review says so with
// the diff before anything is written, and the rollback removes the experiment, so the panel and
// the served content agree. An edit of the shipped content is reviewed alike.
func TestConsoleRollbackOfAShippedWinner(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.ShippedExperiment(t, "", "discount")
	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 3)
	b.waitFor(`document.querySelector('#history button[data-rollback="1"]')`)
	b.spyWrites()
	b.run(chromedp.Click(`#history button[data-rollback="1"]`, chromedp.ByQuery))
	b.answerDialogCheck("Roll back to revision 1", false, func() {
		assert.Contains(t, b.text("#shipped-warning"), "variant “discount” shipped")
		assert.Contains(t, b.text("#shipped-warning"), "removed with this write")
		var rows []string
		b.eval(`[...document.querySelectorAll('#confirm-body table.diff tbody tr')].map(tr => tr.innerText.replace(/\s+/g, ' ').trim())`, &rows)
		assert.Contains(t, rows, "title Discount Own", "the diff shows the content the rollback brings back")
		for _, r := range rows {
			assert.NotRegexp(t, `\dT\d\d:\d\d:\d\d`, r, "times in the team's zone, not raw")
		}
		b.axeCheck("the review of a rollback past a conclude")
		b.shot("experiment-rollback-shipped", "")
	})
	assert.Empty(t, b.writes(), "cancelled: nothing written")
	b.run(chromedp.Click(`#history button[data-rollback="1"]`, chromedp.ByQuery))
	b.answerDialog("Roll back to revision 1", true)
	b.waitFor(`document.querySelector('#popup-form[data-revision="4"]')`)
	assert.Contains(t, strings.Join(b.writes(), "\n"), "/rollback?end_experiment=true ")
	assert.True(t, b.has("#experiment-add"), "the experiment panel no longer says a variant shipped")
	assert.False(t, b.has("#experiment-status"))
	stored := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body
	assert.Nil(t, stored["experiment"])
	assert.Equal(t, "Own", stored["title"])
	in.PublicPopup(t, "after-console-rollback", func(p map[string]any) bool { return p != nil && p["title"] == "Own" })

	// an edit of a shipped title: reviewed, ends the experiment
	other := in.ShippedExperiment(t, "-2", "a")
	b.openPopup(other, 3)
	b.fill("#f-title", "A, reworded")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("End the shipped experiment", true, func() {
		assert.Contains(t, b.text("#shipped-warning"), "variant “a” shipped")
	})
	b.waitFor(`document.querySelector('#popup-form[data-revision="4"]')`)
	assert.Nil(t, in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(other), nil).Body["experiment"])
}

// Issue 41, 4 and 5: Start is reviewed and says a draft popup reaches nobody; a never-run
// experiment offers no Conclude; weights that do not sum to 100 stop the save before any review;
// a state refusal names the problem; with nobody exposed the results say "no data yet".
func TestConsoleExperimentOffersWhatTheAPIAccepts(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.CreatePopup(t, apitest.PopupSpec("draft-test", map[string]any{"status": "draft", "title": "Own", "image_url": "",
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}}))

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 1)
	assert.False(t, b.has("#experiment-conclude"), "a never-run experiment has nothing to conclude")
	b.spyWrites()
	b.run(chromedp.Click("#experiment-start", chromedp.ByQuery))
	b.answerDialogCheck("Start the experiment", false, func() {
		assert.Contains(t, b.text("#start-reach"), "This popup is a draft: nobody sees it")
		var arms []string
		b.eval(`[...document.querySelectorAll('#start-arms tbody tr')].map(tr => tr.innerText.replace(/\s+/g, ' ').trim())`, &arms)
		assert.Equal(t, []string{"variant “a” 50% A", "variant “b” 50% B"}, arms)
		b.axeCheck("the review of a start")
	})
	assert.Empty(t, b.writes(), "cancelled: nothing written")

	// weights summing to 85%: nothing is sent, no review opens, the problem is named at the field
	b.fill(vf("variants[1].weight"), "35")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#form-errors .alert')`)
	var open bool
	b.eval(`document.getElementById('confirm').open`, &open)
	assert.False(t, open, "no review for a change the API refuses")
	assert.Contains(t, b.text("#form-errors"), "must sum to 100, not 85")
	assert.Empty(t, b.writes())
	b.fill(vf("variants[1].weight"), "50")

	// started, then stopped elsewhere: the page's stop is a 409 whose message is shown as such
	b.run(chromedp.Click("#experiment-start", chromedp.ByQuery))
	b.answerDialog("Start the experiment", true)
	b.waitFor(`document.querySelector('#experiment-status .badge.running')`)
	assert.True(t, b.has("#experiment-conclude"), "a running experiment may be concluded")

	// the results page of a phase nobody was exposed in
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id) + "/experiment"))
	b.waitFor(`document.querySelector('#srm')`)
	assert.Contains(t, b.text("#srm"), "no data yet")
	assert.NotContains(t, b.text("#srm"), "OK")
	assert.Contains(t, b.text("#summary"), "No data yet")
	assert.Contains(t, b.text("#summary"), "The popup is a draft")

	b.openPopup(id, 2)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/stop", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	b.eval(`(() => { const f = window.fetch; // the write without If-Match, so that the state refusal, not the 412, answers
		 window.fetch = (u, o) => { if (o && o.headers) delete o.headers['If-Match']; return f(u, o); }; return true; })()`, nil)
	b.run(chromedp.Click("#experiment-stop", chromedp.ByQuery))
	b.answerDialog("Stop the experiment", true)
	b.waitFor(`document.querySelector('#form-errors .alert')`)
	assert.NotContains(t, b.text("#form-errors"), "needs fixing", "a state refusal is not a field to fix")
	assert.Contains(t, b.text("#form-errors"), "not in a state that allows this")
}

// discountPopup creates a live popup with a running experiment of a and discount at 45% each
// and a control at 10% that shows nothing, and returns its id and the phase's salt.
func discountPopup(t *testing.T, in *apitest.Instance, name string) (int64, string) {
	t.Helper()
	id := in.CreatePopup(t, apitest.PopupSpec(name, map[string]any{"title": "Own", "image_url": "",
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 45, "title": "A"}, {"key": "discount", "weight": 45, "title": "Discount"}},
			"control": map[string]any{"weight": 10, "mode": "none"}}}))

	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	return id, res.Body["experiment"].(map[string]any)["salt"].(string)
}

// counts are the known counts of a phase for discountPopup's arms, today: exposed and clicked users.
func phaseCounts(t *testing.T, dsn string, id int64, salt string, a, aClicked, d, dClicked, control int) {
	t.Helper()
	today := time.Now().UTC().Format(time.DateOnly)
	insertExperimentDays(t, dsn, id, salt, []knownDay{
		{"a", today, a, a, aClicked, aClicked, 0}, {"discount", today, d, d, dClicked, dClicked, 0}, {"control", today, control, control, 0, 0, 0}})
}

// Issue 41, 3: the review of a new phase says the winner it ends and how many users keeping the
// assignment moves; Conclude then offers phase 1's winner, naming the phase; the results page of
// phase 2 keeps phase 1's verdict readable.
func TestConsolePhasesKeepTheVerdict(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	id, salt := discountPopup(t, in, "phases")
	phaseCounts(t, cfg.MySQLDSN, id, salt, 20000, 1000, 20000, 1400, 4444)
	e := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Salt: salt,
		Variants: []popup.Variant{{Key: "a", Weight: 45}, {Key: "discount", Weight: 45}}, Control: &popup.Control{Weight: 10, Mode: popup.ControlNone}}
	moved := apitest.CountedUsers(t, cfg.MySQLDSN, id, e, "p-", 300) // under 20/70/10

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 2)
	b.fill(vf("variants[0].weight"), "20")
	b.fill(vf("variants[1].weight"), "70")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish these changes", true, func() {
		assert.Contains(t, b.text("#phase-verdict"), "Phase 1's verdict ends: it names variant “discount” the winner")
		assert.Contains(t, b.text("#phase-keep-help"), apitest.Itoa(moved)+" of the 300 users counted so far move to another arm")
		b.axeCheck("the new-phase review with the verdict it ends")
		b.shot("experiment-new-phase-verdict", "")
	})
	b.waitFor(`document.querySelector('#popup-form[data-revision="3"]')`)
	require.Equal(t, 2.0, in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body["experiment"].(map[string]any)["phase"])

	// phase 2 has no data: Conclude offers phase 1's winner, with its phase
	b.run(chromedp.Click("#experiment-conclude", chromedp.ByQuery))
	b.answerDialogCheck("Conclude", false, func() {
		assert.Contains(t, b.text("#conclude-verdict"), "Phase 1 named variant “discount” the winner; the current phase 2 names none yet")
		var checked string
		b.eval(`(document.querySelector('#conclude-choice input:checked') || {value: ''}).value`, &checked)
		assert.Equal(t, "discount", checked)
	})

	// the results of phase 2 keep phase 1's verdict readable
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id) + "/experiment"))
	b.waitFor(`document.querySelector('#earlier-verdicts li[data-phase="1"]')`)
	assert.Contains(t, b.text(`#earlier-verdicts li[data-phase="1"]`), "variant “discount” won")
	b.axeCheck("results of phase 2")
}

// Issue 41, 6: the results page says in a sentence what to do, with the estimate of how many more
// users a decision needs from the statistics, offers Stop and Conclude there, folds the
// statistician's table, shows differences in points, and fits 1366 px and a phone.
func TestConsoleResultsAMarketerActsOn(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	open, openSalt := discountPopup(t, in, "not-sure")
	phaseCounts(t, cfg.MySQLDSN, open, openSalt, 1000, 50, 1000, 60, 222)
	want := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(open)+"/experiment/results", nil).Body
	need, ok := want["need"].(map[string]any)
	require.True(t, ok, "the results estimate how many more users a decision needs: %v", want["need"])
	require.Equal(t, "discount", need["leader"])

	b := newBrowser(t, in)
	b.signIn()
	b.run(emulation.SetDeviceMetricsOverride(1366, 900, 1, false))
	// from the popup's page the results are one Tab away from the heading
	b.openPopup(open, 2)
	b.waitFor(`document.activeElement.id === 'page-title'`)
	b.run(chromedp.KeyEvent(kb.Tab))
	var focused string
	b.eval(`document.activeElement.id`, &focused)
	assert.Equal(t, "experiment-results-top", focused)
	b.run(chromedp.KeyEvent(kb.Enter))
	b.waitFor(`location.hash === '#/popups/` + apitest.Itoa(open) + `/experiment'`)
	b.waitFor(`document.querySelector('#summary') && document.querySelector('#summary-table')`)
	more := int64(need["more_users"].(float64))
	days := int64(math.Ceil(need["more_users"].(float64) / need["users_per_day"].(float64)))
	assert.Equal(t, "“discount” gets 1.0 points more users clicking than “a” so far (6.0% against 5.0%, +20%), but that is not sure yet: about "+
		withCommas(more)+" more users, about "+withCommas(days)+" days at today’s rate ("+withCommas(int64(math.Round(need["users_per_day"].(float64))))+" users a day).",
		b.text("#summary"))
	var cells []string
	b.eval(`[...document.querySelectorAll('#summary-table tr[data-arm="discount"] td')].map(td => td.textContent)`, &cells)
	assert.Equal(t, []string{"1,000", "60", "6.00%", "+1.00 points", "+20.00%"}, cells, "the difference in points, the lift in percent")
	var opened bool
	b.eval(`document.querySelector('#statistics').open`, &opened)
	assert.False(t, opened, "the statistician's table is folded")
	assert.Contains(t, b.text("#results-stop"), "Stop the experiment")
	for _, width := range []int64{1366, 390} {
		if width == 390 {
			b.run(emulation.SetDeviceMetricsOverride(390, 844, 2, true))
		}
		var fits bool
		b.eval(`document.documentElement.scrollWidth <= window.innerWidth &&
			[...document.querySelectorAll('#summary-table, #summary, #results-actions')].every(el => el.getBoundingClientRect().right <= window.innerWidth)`, &fits)
		assert.True(t, fits, "nothing of the summary is cut off at %d px", width)
		b.axeCheck("results at " + apitest.Itoa(width) + " px")
	}
	b.shot("experiment-results-phone", "")
	b.run(emulation.SetDeviceMetricsOverride(1366, 900, 1, false))

	// no winner: Conclude offers the variants, none pre-selected
	b.run(chromedp.Click("#results-conclude", chromedp.ByQuery))
	b.answerDialogCheck("Conclude", false, func() {
		var checked int
		b.eval(`document.querySelectorAll('#conclude-choice input:checked').length`, &checked)
		assert.Zero(t, checked, "no winner: nothing pre-selected, never a loser")
	})

	// a winner: confident, shipped from the page
	sure, sureSalt := discountPopup(t, in, "sure")
	phaseCounts(t, cfg.MySQLDSN, sure, sureSalt, 20000, 1000, 20000, 1400, 4444)
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(sure) + "/experiment"))
	b.waitFor(`document.querySelector('#summary') && document.title.startsWith('Experiment results: sure ')`)
	assert.Equal(t, "“discount” gets 2.0 points more users clicking than “a” (7.0% against 5.0%, +40%): confident — you can ship it.", b.text("#summary"))
	b.shot("experiment-results", "")
	assert.Equal(t, "Conclude and ship “discount”…", b.text("#results-conclude"))
	b.run(chromedp.Click("#results-conclude", chromedp.ByQuery))
	b.answerDialogCheck("Conclude", true, func() {
		var checked string
		b.eval(`document.querySelector('#conclude-choice input:checked').value`, &checked)
		assert.Equal(t, "discount", checked)
	})
	b.waitFor(`document.querySelector('#experiment-meta .badge.concluded')`)
	stored := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(sure), nil).Body
	assert.Equal(t, "Discount", stored["title"])
	assert.False(t, b.has("#results-actions"), "a concluded experiment has no actions left")
	assert.Contains(t, b.text("#summary"), "variant “discount” was shipped as the popup's content for every user", "after Conclude the summary says what was shipped")
}

// withCommas is the page's rendering of a count (en-US grouping).
func withCommas(n int64) string {
	s := apitest.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Issue 41, 7: the list has an experiment column and filter, the audit log names the popup, the
// history shows times in the team's zone and field names a person reads.
func TestConsoleExperimentsFoundAndAudited(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	plain := in.CreatePopup(t, apitest.PopupSpec("plain", map[string]any{"image_url": ""}))
	running, _ := discountPopup(t, in, "running-test")
	shipped, _ := discountPopup(t, in, "shipped-test")
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(shipped)+"/experiment/conclude", map[string]any{"variant": "discount"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = in.AdminDo(t, http.MethodPut, "/admin/v1/settings", map[string]any{"reporting_time_zone": "America/New_York"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)

	b := newBrowser(t, in)
	b.signIn()
	b.waitFor(`document.querySelector('#popup-table tr[data-id="` + apitest.Itoa(shipped) + `"]')`)
	assert.Contains(t, b.text(`#popup-table tr[data-id="`+apitest.Itoa(running)+`"] td.experiment`), "running")
	assert.Contains(t, b.text(`#popup-table tr[data-id="`+apitest.Itoa(shipped)+`"] td.experiment`), "concluded “discount” shipped")
	assert.Equal(t, "—", b.text(`#popup-table tr[data-id="`+apitest.Itoa(plain)+`"] td.experiment`))
	b.fill("#filter-experiment", "running")
	b.waitFor(`document.querySelectorAll('#popup-table tbody tr').length === 1 && location.hash.includes('experiment=running')`)
	assert.Equal(t, apitest.Itoa(running), b.attr("#popup-table tbody tr", "data-id"))
	b.axeCheck("list of running experiments")
	b.shot("list-experiments", "")

	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/audit"))
	b.waitFor(`document.querySelector('#audit-list .audit-entry[data-action="experiment_conclude"]')`)
	assert.Contains(t, b.text(`#audit-list .audit-entry[data-action="experiment_conclude"]`), "admin (admin) concluded experiment “shipped-test” — variant Discount wins")

	// a weight change kept in phase: the history names the field in words, the times in the team's zone
	p := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(running), nil).Body
	p["experiment"].(map[string]any)["variants"].([]any)[0].(map[string]any)["weight"] = 40
	p["experiment"].(map[string]any)["variants"].([]any)[1].(map[string]any)["weight"] = 50
	res = in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(running)+"?accept_reassignment=true", p)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	b.openPopup(running, 3)
	b.waitFor(`document.querySelector('#history li[data-revision="3"] table.diff')`)
	assert.Contains(t, b.text(`#history li[data-revision="3"] .muted`), "(America/New_York)")
	var fields []string
	b.eval(`[...document.querySelectorAll('#history li[data-revision="3"] table.diff tbody th')].map(th => th.textContent)`, &fields)
	assert.Contains(t, fields, "experiment › variant 1 › weight")
	var started []string
	b.eval(`[...document.querySelectorAll('#history li[data-revision="2"] table.diff tbody tr')].filter(tr => tr.querySelector('th').textContent === 'experiment › phase started at').map(tr => tr.children[2].textContent)`, &started)
	require.Len(t, started, 1, "the start sets the phase's first run")
	assert.Contains(t, started[0], "(America/New_York)")
	assert.NotContains(t, started[0], "Z", "no raw RFC 3339 time")
	b.axeCheck("history in words")
}

// Issue 41, 8: on a phone the action bar is compact with the destructive actions behind a menu,
// the preview floats beside the fields on request, and a review's confirming button comes after
// its diff.
func TestConsoleExperimentOnAPhone(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id, _ := discountPopup(t, in, "phone-test")
	b := newBrowser(t, in)
	b.signIn()
	b.run(emulation.SetDeviceMetricsOverride(390, 844, 2, true))
	b.openPopup(id, 2)
	var bar float64
	b.eval(`document.querySelector('.actions.sticky').getBoundingClientRect().height`, &bar)
	assert.Less(t, bar, 100.0, "the action bar leaves the phone's screen to the form")
	var hidden bool
	b.eval(`document.getElementById('archive').offsetParent === null`, &hidden)
	assert.True(t, hidden, "Archive is behind the menu, not under the thumb")
	b.run(chromedp.Click("#more-toggle", chromedp.ByQuery))
	b.waitFor(`document.getElementById('archive').offsetParent !== null && document.getElementById('more-toggle').getAttribute('aria-expanded') === 'true'`)
	b.axeCheck("the action menu on a phone")
	b.run(chromedp.Click("#more-toggle", chromedp.ByQuery))

	// the preview beside the fields: the title typed shows in the floating preview, in view
	b.run(chromedp.Click("#preview-toggle", chromedp.ByQuery))
	b.fill("#f-title", "Typed on a phone")
	var inView bool
	b.eval(`(() => { const r = document.querySelector('#preview .pv-title').getBoundingClientRect();
		return r.top >= 0 && r.bottom <= window.innerHeight && document.querySelector('#preview .pv-title').textContent === 'Typed on a phone'; })()`, &inView)
	assert.True(t, inView, "the preview is in view while the fields are edited")
	b.axeCheck("the floating preview on a phone")
	b.shot("edit-phone-preview", "")
	b.run(chromedp.Click("#preview-toggle", chromedp.ByQuery))
	b.fill("#f-title", "Own")

	// the phase review: Publish after the diff
	b.fill(vf("variants[0].weight"), "20")
	b.fill(vf("variants[1].weight"), "70")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish these changes", false, func() {
		var after bool
		b.eval(`document.getElementById('confirm-ok').getBoundingClientRect().top >= document.querySelector('#confirm-body table.diff').getBoundingClientRect().bottom`, &after)
		assert.True(t, after, "the confirming button comes after the diff")
		var width int
		b.eval(`document.documentElement.scrollWidth`, &width)
		assert.LessOrEqual(t, width, 390)
		b.axeCheck("the phase review on a phone")
	})
	var width int
	b.eval(`document.documentElement.scrollWidth`, &width)
	assert.LessOrEqual(t, width, 390, "the form does not scroll sideways")
}
