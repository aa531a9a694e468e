package apiserver_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// Running an experiment to a decision in the console (issue 41): what explain and the previews
// say a user in an arm gets, the reviews of the transitions and of a change to a concluded
// experiment's content, the phases' verdicts, the results a marketer acts on, and finding and
// auditing experiments.

// startedExperiment creates a live popup "own" with variants a and discount at 45% each and a
// control at 10% in mode, under a live "fallback" popup of lower priority, starts it and returns
// both ids and the running experiment as the assignment sees it.
func startedExperiment(t *testing.T, in *instance, mode string) (id, fallback int64, e *popup.Experiment) {
	t.Helper()
	fallback = in.createPopup(t, popupSpec("fallback", map[string]any{"priority": 1, "title": "Fallback", "image_url": ""}))
	id = in.createPopup(t, popupSpec("own", map[string]any{"priority": 10, "title": "Own", "image_url": "",
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 45, "title": "A"}, {"key": "discount", "weight": 45, "title": "Discount"}},
			"control": map[string]any{"weight": 10, "mode": mode}}}))
	res := in.adminDo(t, http.MethodPost, "/admin/v1/popups/"+itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	require.Equal(t, http.StatusOK, in.adminDo(t, http.MethodPost, "/admin/v1/cache/reload", nil).Status)
	e = &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Salt: res.Body["experiment"].(map[string]any)["salt"].(string),
		Variants: []popup.Variant{{Key: "a", Weight: 45}, {Key: "discount", Weight: 45}}, Control: &popup.Control{Weight: 10, Mode: popup.ControlMode(mode)}}
	return id, fallback, e
}

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
			in := start(t, testConfig(t), nil)
			id, fallback, e := startedExperiment(t, in, mode)
			users := armUsers(t, e, "ux-", 1)
			control, discount := users[2][0], users[1][0]
			b := newBrowser(t, in)
			b.signIn()

			verdict := b.explainUser(control)
			assert.Equal(t, "control", b.attr("#explain-out .verdict", "data-arm"))
			assert.Contains(t, verdict, "control group of popup #"+itoa(id)+" own")
			if mode == "none" {
				assert.Contains(t, verdict, "the app gets no popup")
				assert.False(t, b.has("#explain-out .preview"), "nothing is drawn on the phone for a control user who gets nothing")
			} else {
				assert.Contains(t, verdict, "falls through: the app gets popup #"+itoa(fallback)+" fallback “Fallback”")
				assert.Equal(t, "Fallback", b.text("#explain-out .preview .pv-title"))
			}
			b.axeCheck("explain for a control user")
			if mode == "none" {
				b.shot("explain-control", "")
			}

			verdict = b.explainUser(discount)
			assert.Contains(t, verdict, "popup #"+itoa(id)+" own “Discount”, variant “discount” of its experiment")
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
				assert.Contains(t, b.text("#draft-explain-out .verdict"), "the app gets popup #"+itoa(fallback))
			}
			_, served := in.get(t, "uid="+control+"&platform=ios&app_version=9.0.0")
			if mode == "none" {
				assert.Nil(t, served.Body["popup"], "the public API agrees: nothing")
			} else {
				assert.Equal(t, float64(fallback), served.Body["popup"].(map[string]any)["id"], "the public API agrees: the fallback")
			}
		})
	}
}
