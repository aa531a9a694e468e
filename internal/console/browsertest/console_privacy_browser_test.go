package browsertest

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestConsoleOffersAnAdminExportAndErase: the user page (Explain for a user) offers an admin the
// user's export and erasure, the erasure only after a confirmation, and offers a publisher
// neither.
func TestConsoleOffersAnAdminExportAndErase(t *testing.T) {
	t.Parallel()
	cfg := apitest.PrivacyConfig(t)
	cfg.AdminTokens = []string{"pat@publisher:tok-publisher"}
	in := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	db := apitest.DB(t, cfg)
	const uid = "console-erase-1"
	id := in.CreatePopup(t, apitest.PopupSpec("privacy-console", nil))
	in.PublicPopup(t, uid, func(p map[string]any) bool { return p != nil && int64(p["id"].(float64)) == id })
	apitest.Eventually(t, 15*time.Second, "the impression is written", func() bool {
		return apitest.Count(t, db, `SELECT COUNT(*) FROM popup_action_log WHERE uid = ?`, uid) == 1
	})

	explain := func(b *browser) {
		b.run(chromedp.Navigate(b.origin + "/admin/ui/#/explain"))
		b.fill("#x-uid", uid)
		b.run(chromedp.Click("#explain", chromedp.ByQuery))
		b.waitFor(`document.querySelector('#explain-out .explain-result')`)
	}
	controls := []string{"#export-user", "#erase-user"}

	pat := newBrowser(t, in)
	pat.signInAs("tok-publisher", "pat")
	explain(pat)
	assert.Equal(t, want(controls), pat.offered(controls...), "a publisher is offered neither")

	b := newBrowser(t, in)
	b.signIn()
	explain(b)
	assert.Equal(t, want(controls, controls...), b.offered(controls...))
	b.axeCheck("explain for a user, with the personal-data actions")

	b.run(chromedp.Click("#export-user", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#privacy-out').textContent.includes('Downloaded user-export.json')`)

	// Erase asks first; Cancel erases nothing.
	b.run(chromedp.Click("#erase-user", chromedp.ByQuery))
	b.waitFor(`document.getElementById('confirm').open && document.activeElement.id === 'confirm-cancel'`)
	assert.Contains(t, b.text("#confirm-text"), uid)
	b.axeCheck("erase confirmation")
	b.run(chromedp.Click("#confirm-cancel", chromedp.ByQuery))
	b.waitFor(`!document.getElementById('confirm').open`)
	assert.Zero(t, apitest.Count(t, db, `SELECT COUNT(*) FROM privacy_erasure`), "a cancelled erasure is not requested")

	b.run(chromedp.Click("#erase-user", chromedp.ByQuery))
	b.waitFor(`document.getElementById('confirm').open`)
	b.run(chromedp.Click("#confirm-ok", chromedp.ByQuery))
	var outText string
	deadline := time.Now().Add(60 * time.Second)
	for !strings.HasPrefix(outText, "Erased:") {
		require.True(t, time.Now().Before(deadline), "the page did not report the erasure done; it says %q", outText)
		time.Sleep(200 * time.Millisecond)
		b.eval(`document.querySelector('#privacy-out').textContent`, &outText)
	}
	assert.Contains(t, outText, "popup_action_log")
	assert.Zero(t, apitest.Count(t, db, `SELECT COUNT(*) FROM popup_action_log WHERE uid = ?`, uid))
	b.axeCheck("erasure done")
}
