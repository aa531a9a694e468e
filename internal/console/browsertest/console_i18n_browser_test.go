package browsertest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The translations editor beside the default content, the missing strings per language, the
// phone preview per language, the translation table's download and upload, and the pacing
// settings (issue 37).

func TestConsoleTranslationsEditor(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.CreatePopup(t, apitest.PopupSpec("i18n-console", map[string]any{"status": "draft", "image_url": "", "translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": "Abrir"}}},
	}}))

	b := newBrowser(t, in)
	b.signIn()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id)))
	b.waitFor(`document.querySelector('#popup-form[data-id="` + apitest.Itoa(id) + `"]') && document.querySelector('#translations fieldset.translation')`)
	b.waitFor(`document.querySelector('#missing-none')`)

	// a new language starts empty: its strings are listed as missing
	b.fill("#translation-new", "de")
	b.run(chromedp.Click("#translation-add", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#missing-list li[data-lang="de"]')`)
	assert.Equal(t, "de: title, content, button 1", b.text(`#missing-list li[data-lang="de"]`))
	b.axeCheck("popup form with translations")

	// the preview in a language shows its strings
	b.run(chromedp.SetValue("#preview-lang", "pt-BR", chromedp.ByQuery))
	b.eval(`document.querySelector('#preview-lang').dispatchEvent(new Event('change', {bubbles: true}))`, nil)
	b.waitFor(`document.querySelector('#pv-title').textContent === 'Olá'`)
	b.shot("translations", "#translations")

	// the new language filled in, saved
	b.fill(`#translations fieldset.translation:last-of-type input[name="translation-title"]`, "Hallo")
	b.fill(`#translations fieldset.translation:last-of-type textarea[name="translation-content"]`, "hallo")
	b.fill(`#translations fieldset.translation:last-of-type input[name="translation-button"]`, "Öffnen")
	b.waitFor(`document.querySelector('#missing-none')`)
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form').dataset.revision === '2'`)
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	de := res.Body["translations"].(map[string]any)["de"].(map[string]any)
	assert.Equal(t, "Hallo", de["title"])
	assert.Equal(t, "Öffnen", de["buttons"].([]any)[0].(map[string]any)["text"])

	// the table: a download, then an upload that names the cell at fault and applies nothing
	b.run(chromedp.Click("#translations-download", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#translations-csv-out .alert.info')`)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("key,default,de\ntitle,,Hallo\ncontent,,\nbuttons[0].text,,Öffnen\n"), 0o644))
	b.run(chromedp.SetUploadFiles("#translations-file", []string{bad}, chromedp.ByQuery), chromedp.Click("#translations-upload", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#translations-csv-errors')`)
	assert.Contains(t, b.text("#translations-csv-errors"), "row 3, column de")
	assert.Equal(t, 1, strings.Count(strings.ToLower(b.text("#translations-csv-errors")), "not applied"), "said once")
	b.axeCheck("translation table refused")
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.EqualValues(t, 2, res.Body["revision"], "nothing applied")
}

func TestConsolePacingSettings(t *testing.T) {
	t.Parallel()
	in, _ := apitest.StartWithRoles(t)
	b := newBrowser(t, in)
	b.signInAs(apitest.RoleTokens["admin"], "admin")
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/settings"))
	b.waitFor(`document.querySelector('#min-gap') && document.querySelector('#daily-cap')`)

	b.fill("#min-gap", "-5")
	b.run(chromedp.Click("#settings-save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#min-gap-err')`)
	assert.Equal(t, "true", b.attr("#min-gap", "aria-invalid"))
	b.axeCheck("settings, a bad gap")

	b.fill("#min-gap", "10")
	b.fill("#min-gap-unit", "minutes")
	b.fill("#daily-cap", "3")
	b.run(chromedp.Click("#settings-save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#settings-out .alert.info')`)
	assert.Contains(t, b.text("#settings-out"), "at least 10 minutes between two popups, at most 3 a day")
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/settings", nil)
	assert.EqualValues(t, 600, res.Body["min_gap_seconds"])
	assert.EqualValues(t, 3, res.Body["daily_cap"])
	b.axeCheck("settings with pacing")
	b.shot("settings-pacing", "#pacing")
}
