package browsertest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Experiments in the console (docs/CONTRACT.md §10, issue 23): the popup form's Experiment
// section with its live weight check and the API's field errors at the variant's field, the
// transitions with If-Match, the review of an edit that starts a new phase (or keeps the
// assignment), and the results page over known counts, with its sample-ratio alarm.

// has tells whether the page holds an element matching sel.
func (b *browser) has(sel string) bool { return b.offered(sel)[sel] }

// vf is the selector of an experiment field of the form, by the API's name of it.
func vf(name string) string { return `[data-field="experiment.` + name + `"]` }

func TestConsoleExperimentEditStartNewPhaseConclude(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	b := newBrowser(t, in)
	b.signIn()
	b.newForm()
	b.fill("#f-name", "spring test")
	b.fill("#f-title", "Spring sale")
	b.fill("#f-content", "Ten percent off.")

	// a new experiment starts from the popup's own content, two variants at 50%
	b.run(chromedp.Click("#experiment-add", chromedp.ByQuery))
	b.waitFor(`document.querySelector('` + vf("variants[1].key") + `')`)
	assert.Equal(t, "a", b.value(vf("variants[0].key")))
	assert.Equal(t, "Spring sale", b.value(vf("variants[1].title")), "the variants start from the popup's own content")
	assert.Contains(t, b.text("#weights-sum"), "Weights sum to 100%")

	// the weight check follows every edit
	b.fill(vf("variants[1].weight"), "30")
	assert.Contains(t, b.text("#weights-sum"), "Weights sum to 80%: they must sum to 100%")
	assert.Equal(t, "weights-sum bad", b.attr("#weights-sum", "class"))
	b.run(chromedp.Click("#exp-control", chromedp.ByQuery))
	b.fill(vf("control.weight"), "20")
	b.fill(vf("control.mode"), "fall_through")
	assert.Contains(t, b.text("#weights-sum"), "Weights sum to 100% over 3 arms")
	b.fill(vf("variants[1].key"), "b")
	b.fill(vf("variants[1].title"), "Spring sale: 20% off")
	b.fill(vf("variants[1].link_url"), "ftp://shop.example/spring")
	b.fill("#exp-end", "2026-12-09T08:00")
	// the preview shows a variant's content on request
	b.eval(`(() => { const s = document.querySelector('#preview-arm'); s.selectedIndex = 2; s.dispatchEvent(new Event('change')); return true; })()`, nil)
	assert.Equal(t, "Spring sale: 20% off", b.text("#preview .pv-title"))
	b.axeCheck("edit with an experiment")

	// the API's 400 names the variant's field: shown at that field
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	sel := vf("variants[1].link_url") + `[aria-invalid=true]`
	b.waitFor(`document.querySelector('` + sel + `')`)
	assert.Contains(t, b.text("#form-errors"), "experiment › variant 2 › link")
	var errID string
	b.eval(`document.querySelector('`+sel+`').getAttribute('aria-describedby')`, &errID)
	assert.Contains(t, errID, "-err")
	var focused string
	b.eval(`document.activeElement.dataset.field || ''`, &focused)
	assert.Equal(t, "experiment.variants[1].link_url", focused, "focus goes to the invalid variant field")

	b.fill(vf("variants[1].link_url"), "https://shop.example/spring")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="1"] #experiment-status')`)
	id := int64(0)
	var hash string
	b.eval(`location.hash`, &hash)
	_, err := fmt.Sscanf(hash, "#/popups/%d", &id)
	require.NoError(t, err)
	stored := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	e := stored.Body["experiment"].(map[string]any)
	assert.Equal(t, "draft", e["status"])
	assert.Equal(t, map[string]any{"weight": 20.0, "mode": "fall_through"}, e["control"])
	assert.Equal(t, "2026-12-09T00:00:00Z", e["planned_end_at"], "the planned end is entered in the browser's zone (Asia/Shanghai)")
	assert.Equal(t, "Spring sale: 20% off", e["variants"].([]any)[1].(map[string]any)["title"])
	assert.Contains(t, b.text("#experiment-status"), "draft")

	// start, with the ETag of the version on show
	b.spyWrites()
	b.run(chromedp.Click("#experiment-start", chromedp.ByQuery))
	b.answerDialog("Start the experiment", true) // reviewed like a publish (issue 41, 4)
	b.waitFor(`document.querySelector('#experiment-status .badge.running')`)
	w := b.writes()
	require.Len(t, w, 1)
	assert.Contains(t, w[0], "POST /admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start ")
	assert.False(t, strings.HasSuffix(w[0], " -"), "the start carries If-Match: %s", w[0])
	assert.True(t, b.has("#experiment-stop"), "a running experiment offers Stop")
	assert.True(t, b.has("#experiment-remove[disabled]"), "a running experiment cannot be removed")
	running := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	re := running.Body["experiment"].(map[string]any)
	assert.Equal(t, "running", re["status"])
	salt := re["salt"]

	// a weight change of a running experiment: the review says a new phase begins; cancelling
	// writes nothing
	b.fill(vf("variants[0].weight"), "40")
	b.fill(vf("variants[1].weight"), "40")
	b.spyWrites()
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("new experiment phase", false, func() {
		assert.Contains(t, b.text("#phase-warning"), "assigned afresh")
		assert.Contains(t, b.text("#phase-choice legend"), "phase 2")
		assert.True(t, b.has("#phase-new:checked"), "a new phase is the default")
		b.axeCheck("the new-phase review")
		b.shot("experiment-new-phase", "")
	})
	assert.Empty(t, b.writes(), "cancelled: nothing written")

	// keeping the assignment: ?accept_reassignment=true, the phase and salt stay
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("new experiment phase", true, func() {
		b.run(chromedp.Click("#phase-keep", chromedp.ByQuery))
	})
	b.waitFor(`document.querySelector('#popup-form[data-revision="3"]')`)
	assert.Contains(t, strings.Join(b.writes(), "\n"), "/admin/v1/popups/"+apitest.Itoa(id)+"?accept_reassignment=true ")
	kept := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body["experiment"].(map[string]any)
	assert.Equal(t, 1.0, kept["phase"])
	assert.Equal(t, salt, kept["salt"])
	assert.Equal(t, 40.0, kept["variants"].([]any)[0].(map[string]any)["weight"])

	// the default: a new phase with a new salt
	b.fill(vf("variants[0].weight"), "50")
	b.fill(vf("variants[1].weight"), "30")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("new experiment phase", true)
	b.waitFor(`document.querySelector('#popup-form[data-revision="4"]')`)
	next := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body["experiment"].(map[string]any)
	assert.Equal(t, 2.0, next["phase"])
	assert.NotEqual(t, salt, next["salt"])
	assert.Contains(t, b.text("#experiment-status"), "phase 2")
	b.shot("experiment-edit", "#experiment")

	// a coverage change moves nobody: no phase review
	b.fill("#exp-coverage", "80")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="5"]')`)

	// stop, then conclude with variant b: its content becomes the popup's
	b.run(chromedp.Click("#experiment-stop", chromedp.ByQuery))
	b.answerDialog("Stop the experiment", true)
	b.waitFor(`document.querySelector('#experiment-status .badge.stopped')`)
	b.run(chromedp.Click("#experiment-conclude", chromedp.ByQuery))
	b.answerDialogCheck("Conclude", true, func() {
		assert.Contains(t, b.text("#confirm-text"), "becomes the popup's own")
		assert.Contains(t, b.text("#conclude-verdict"), "The results of phase 2 name no winner", "the verdict is said; nothing counted yet")
		b.run(chromedp.Click(`#conclude-choice input[value="b"]`, chromedp.ByQuery))
	})
	b.waitFor(`document.querySelector('#experiment-status .badge.concluded')`)
	assert.Equal(t, "Spring sale: 20% off", b.value("#f-title"), "the shipped variant's title is the popup's")
	assert.True(t, b.has(vf("variants[0].weight")+"[disabled]"), "a concluded experiment is read-only")
	assert.False(t, b.has("#experiment-start"), "a concluded experiment has no transitions")
	assert.Equal(t, "concluded", in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body["experiment"].(map[string]any)["status"])

	// a concluded experiment can only be removed (experiment null); then a new one may be added
	b.run(chromedp.Click("#experiment-remove", chromedp.ByQuery))
	assert.Contains(t, b.text("#experiment-removed"), "removed when you save")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#experiment-add')`)
	gone := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Nil(t, gone.Body["experiment"], gone.Raw)
	assert.Equal(t, "Spring sale: 20% off", gone.Body["title"], "the shipped content stays")
}

// A transition refused by the API is shown: the experiment started in another tab meanwhile makes
// the page's version stale (412: compare and reload); a transition the state no longer allows is
// the API's 409, its message shown. The page always sends If-Match, so such a state conflict
// reaches it as a 412 first; the 409 is seen here by a write without it.
func TestConsoleExperimentConflictsShown(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.CreatePopup(t, map[string]any{"name": "conflicts", "status": "draft", "title": "Own",
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}})

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 1)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	b.run(chromedp.Click("#experiment-start", chromedp.ByQuery))
	b.answerDialog("Start the experiment", true)
	b.waitFor(`document.querySelector('#stale')`)
	assert.Contains(t, b.text("#form-errors"), "changed by someone else")
	b.run(chromedp.Click("#discard", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#experiment-status .badge.running')`)

	// stopped elsewhere while this page shows it running: the page's stop is a 409, named
	res = in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/stop", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	b.eval(`(() => { const f = window.fetch; // the write without If-Match: see above
		 window.fetch = (u, o) => { if (o && o.headers) delete o.headers['If-Match']; return f(u, o); }; return true; })()`, nil)
	b.run(chromedp.Click("#experiment-stop", chromedp.ByQuery))
	b.answerDialog("Stop the experiment", true)
	b.waitFor(`document.querySelector('#form-errors .alert')`)
	assert.NotContains(t, b.text("#form-errors"), "HTTP 409", "the API's message, not a bare status")
	assert.NotEmpty(t, b.text("#form-errors"))
}

// answerDialogCheck waits for the shared dialog titled with titlePart, runs check while it is open,
// and answers it.
func (b *browser) answerDialogCheck(titlePart string, ok bool, check func()) {
	b.t.Helper()
	b.waitFor(`document.getElementById('confirm').open && document.getElementById('confirm-title').textContent.includes(` + js(titlePart) + `)`)
	check()
	b.answerDialog(titlePart, ok)
}

// The experiment's controls follow the role (docs/CONTRACT.md §9, §10): the transitions as a PUT
// of the popup would need (editor while the popup is a draft, publisher otherwise); a viewer sees
// the experiment and its results link, read-only.
func TestConsoleExperimentFollowsTheRole(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	exp := map[string]any{"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}
	draft := in.CreatePopup(t, map[string]any{"name": "draft test", "status": "draft", "title": "Own", "experiment": exp})
	live := in.CreatePopup(t, map[string]any{"name": "live test", "status": "active", "title": "Own", "experiment": exp})
	// no Conclude: the experiments are drafts, which the API does not conclude (issue 41, 5)
	sels := []string{"#experiment-start", "#experiment-conclude", "#experiment-remove", "#experiment-results-link", "#variant-add"}
	mayAll := []string{"#experiment-start", "#experiment-remove", "#experiment-results-link", "#variant-add"}
	tests := []struct {
		tok, operator string
		id            int64
		want          map[string]bool
	}{
		{"tok-viewer", "vera", live, want(sels, "#experiment-results-link")},
		{"tok-editor", "ed", live, want(sels, "#experiment-results-link")},
		{"tok-editor", "ed", draft, want(sels, mayAll...)},
		{"tok-publisher", "pat", live, want(sels, mayAll...)},
	}
	for _, tt := range tests {
		b := newBrowser(t, in)
		b.signInAs(tt.tok, tt.operator)
		b.openPopup(tt.id, 1)
		assert.Equal(t, tt.want, b.offered(sels...), "%s on popup %d", tt.operator, tt.id)
		assert.Contains(t, b.text("#experiment-status"), "draft")
	}
}

// Publishing a live popup whose running experiment's arms change: the one review shows both the
// diff and the new phase.
func TestConsoleExperimentNewPhaseInThePublishReview(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.CreatePopup(t, map[string]any{"name": "live test", "status": "active", "title": "Own",
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}})

	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 2)
	b.fill(vf("variants[1].title"), "B, reworded")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish these changes", true, func() {
		assert.Contains(t, b.text("#phase-choice legend"), "phase 2")
		assert.Contains(t, b.text("#confirm-body table"), "experiment › variant 2 › title")
	})
	b.waitFor(`document.querySelector('#popup-form[data-revision="3"]')`)
	e := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body["experiment"].(map[string]any)
	assert.Equal(t, 2.0, e["phase"], "a variant's content changed: a new phase")
	assert.Equal(t, "running", e["status"])
}

// The experiment section picks the primary goal (issue 49): it shows the stored goal and every
// goal the results report; a save that changes something else sends the goal back, so neither the
// review nor the stored popup changes it; picking another goal is reviewed and stored.
func TestConsoleExperimentPrimaryGoal(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	for _, g := range []map[string]any{{"key": "purchase", "name": "Purchase", "value": "sum"}, {"key": "signup", "name": "Sign-up"}} {
		res := in.AdminDo(t, http.MethodPost, "/admin/v1/goals", g)
		require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	}
	id := in.CreatePopup(t, map[string]any{"name": "goal test", "status": "active", "title": "Own",
		"experiment": map[string]any{"primary_goal": "purchase",
			"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}})

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 1)
	assert.Equal(t, "purchase", b.value("#exp-primary-goal"))
	assert.Contains(t, b.text("#exp-primary-goal-help"), "Every goal is reported in the results: Purchase (purchase), Sign-up (signup)")
	b.axeCheck("the experiment's primary goal")

	// another field changed: the review lists it alone, and the goal stays
	b.fill(`[data-field="max_impressions"]`, "5")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish these changes", true, func() {
		diff := b.text("#confirm-body table")
		assert.Contains(t, diff, "most impressions per user")
		assert.NotContains(t, diff, "primary goal")
	})
	b.waitFor(`document.querySelector('#popup-form[data-revision="2"]')`)
	stored := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Equal(t, 5.0, stored.Body["max_impressions"])
	assert.Equal(t, "purchase", stored.Body["experiment"].(map[string]any)["primary_goal"], "a save of another field keeps the goal")

	// another goal picked: reviewed, stored
	b.fill("#exp-primary-goal", "signup")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish these changes", true, func() {
		assert.Contains(t, b.text("#confirm-body table"), "experiment › primary goal")
	})
	b.waitFor(`document.querySelector('#popup-form[data-revision="3"]')`)
	stored = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Equal(t, "signup", stored.Body["experiment"].(map[string]any)["primary_goal"])
	assert.Equal(t, "signup", b.value("#exp-primary-goal"))
}
