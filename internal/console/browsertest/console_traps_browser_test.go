package browsertest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// No traps (issue 53): a new popup does not start at the lowest priority; the publish review says
// which live popup of higher priority would win over it, and for how many sample users; its
// sentence follows the schedule; a scheduled draft can be tried as if it had started; the state is
// said in words; replacing the list of a live popup's audience names the popup.

func TestConsoleReviewWarnsOfAHigherPriorityPopup(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	in.CreatePopup(t, map[string]any{"name": "Winter sale", "status": "active", "priority": 100, "title": "Winter"})
	b := newBrowser(t, in)
	b.signIn()
	b.newForm()
	assert.Equal(t, "50", b.value("#f-priority"), "a new popup starts in the middle, not at the lowest priority")
	b.fill("#f-name", "Spring sale")
	b.fill("#f-title", "Spring")
	b.fill("#f-status", "active")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish", false, func() {
		assert.Contains(t, b.text("#confirm-text"), "within 2 seconds")
		w := b.text("#priority-warning")
		assert.Contains(t, w, "“Winter sale” (priority 100) wins for 20 of them")
		assert.Contains(t, w, "for 20 of 20 sample users")
		assert.Contains(t, w, "above 100")
		assert.NotContains(t, b.text("#confirm-body table.diff"), "undefined", "an omitted field is no row")
		b.axeCheck("publish review with a priority warning")
		b.shot("edit-priority-warning", "")
	})

	// a later start: the review says when it is served; above the live popup, no warning
	b.fill("#f-priority", "101")
	b.fill("#f-start", time.Now().Add(72*time.Hour).Format("2006-01-02T15:04"))
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialogCheck("Publish", false, func() {
		assert.Contains(t, b.text("#confirm-text"), "serves it from")
		assert.NotContains(t, b.text("#confirm-text"), "within 2 seconds")
		var warned bool
		b.eval(`!!document.querySelector('#priority-warning')`, &warned)
		assert.False(t, warned, "priority 101 beats 100")
	})

	// the scheduled draft tried on a user, as if it had started
	b.fill("#d-uid", "u-1")
	b.fill("#d-version", "9.0.0")
	b.run(chromedp.Click(`//button[text()="Explain this draft for the user"]`, chromedp.BySearch))
	b.waitFor(`document.querySelector('#draft-explain-out .verdict')`)
	assert.Contains(t, b.text("#draft-as-if-started"), "as if it had started")
	assert.Contains(t, b.text("#draft-explain-out .verdict"), "this draft")
	b.axeCheck("draft tried as if started")
}

func TestConsoleStatesInWordsAndLiveAudienceReplace(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/audiences", map[string]any{"name": "VIPs"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	aud := int64(res.Body["id"].(float64))
	later := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Minute)
	id := in.CreatePopup(t, map[string]any{"name": "VIP preview", "status": "active", "title": "VIP", "start_at": later.Format(time.RFC3339),
		"targeting": map[string]any{"audiences": map[string]any{"include": []int64{aud}}}})

	live := in.CreatePopup(t, map[string]any{"name": "VIP welcome", "status": "active", "title": "Hi",
		"targeting": map[string]any{"audiences": map[string]any{"include": []int64{aud}}}})

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 1)
	assert.Equal(t, "scheduled", b.text("#popup-state"))
	assert.Contains(t, b.text("#popup-meta"), "it starts")
	assert.NotContains(t, b.text("#popup-meta"), "Status: active")

	b.openAudience(fmt.Sprint(aud))
	b.uploadMembers(memberFile(t, "vips.txt", "vip-1\nvip-2\n"), "replace")
	b.answerDialogCheck("Replace every member", false, func() {
		w := b.text("#replace-live")
		assert.Contains(t, w, "VIP welcome")
		assert.Contains(t, w, "VIP preview")
		assert.Contains(t, b.attr(`#replace-live a[href="#/popups/`+apitest.Itoa(live)+`"]`, "href"), apitest.Itoa(live))
		b.axeCheck("replace review of a live popup's audience")
	})
}
