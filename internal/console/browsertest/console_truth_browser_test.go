package browsertest

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Reviews that tell the truth (issue 53): a popup the operator has not changed is never "dirty"
// and its review shows no change, whatever fields it holds; the translators' table for a live
// popup goes through the same review as the form.

// TestConsoleUntouchedPopupIsNeverDirty opens popups that hold every kind of field the form
// edits (translations with and without button links, an experiment with a control, audiences,
// every targeting list, a schedule, cooldowns left to their defaults, the exemptions, ext) and, for
// each, leaves it without a word (no "unsaved changes" prompt) and finds a save writes nothing.
func TestConsoleUntouchedPopupIsNeverDirty(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/audiences", map[string]any{"name": "VIPs"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	aud := int64(res.Body["id"].(float64))
	later := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Minute)
	fixtures := []struct {
		name string
		spec map[string]any
	}{
		{"bare draft", map[string]any{"name": "bare", "status": "draft"}},
		{"live with translations", apitest.PopupSpec("translated", map[string]any{"status": "active", "image_alt": "a cart", "translations": map[string]any{
			"de":    map[string]any{"title": "Hallo", "content": "Inhalt", "buttons": []map[string]any{{"text": "Jetzt shoppen"}}},
			"pt-BR": map[string]any{"title": "Olá", "content": "oi", "link_url": "https://example.com/pt", "buttons": []map[string]any{{"text": "Abrir", "link_url": "app://pt"}}},
		}})},
		{"empty translations", apitest.PopupSpec("no-languages", map[string]any{"status": "active", "translations": map[string]any{}})},
		{"two buttons, one translated", apitest.PopupSpec("two-buttons", map[string]any{"status": "paused",
			"buttons":      []map[string]any{{"text": "Open", "link_url": "app://open"}, {"text": "Later"}},
			"translations": map[string]any{"fr": map[string]any{"title": "Salut", "content": "salut", "buttons": []map[string]any{{"text": "Ouvrir"}, {"text": "Plus tard"}}}}})},
		{"targeting and audiences", apitest.PopupSpec("aimed", map[string]any{"status": "active", "priority": 7, "targeting": map[string]any{
			"platforms": []string{"ios", "android"}, "min_app_version": "1.2.0", "max_app_version": "9.0.0", "regions": []string{"DE", "FR"},
			"langs": []string{"de", "fr"}, "rollout_percent": 30, "uids": []string{"qa-1", "qa-2"},
			"audiences": map[string]any{"include": []int64{aud}, "exclude": []int64{}},
		}})},
		{"schedule and rules", apitest.PopupSpec("scheduled", map[string]any{"status": "active", "start_at": later.Format(time.RFC3339),
			"end_at": later.Add(48 * time.Hour).Format(time.RFC3339), "reshow_after_seconds": 3600, "click_cooldown_seconds": 7200,
			"max_impressions": 3, "exempt_from_caps": true, "holdout_exempt": true, "ext": map[string]any{"theme": "dark", "n": 2}})},
		{"experiment with a control", apitest.PopupSpec("tested", map[string]any{"status": "draft", "translations": map[string]any{
			"de": map[string]any{"title": "Test", "content": "test", "buttons": []map[string]any{{"text": "Los"}}}},
			"experiment": map[string]any{"coverage_percent": 80, "variants": []map[string]any{
				{"key": "a", "weight": 40, "title": "A"}, {"key": "b", "weight": 40, "title": "B", "buttons": []map[string]any{{"text": "Go", "link_url": "app://go"}},
					"translations": map[string]any{"de": map[string]any{"title": "B auf Deutsch", "buttons": []map[string]any{{"text": "Los"}}}}}},
				"control": map[string]any{"weight": 20, "mode": "fall_through"}}})},
	}
	b := newBrowser(t, in)
	b.signIn()
	for _, fx := range fixtures {
		if _, ok := fx.spec["image_url"]; ok {
			fx.spec["image_url"] = "" // no request to another origin
		}
		id := in.CreatePopup(t, fx.spec)
		b.openPopup(id, 1)
		var dirty bool
		b.eval(`(async () => { const s = await import('/admin/ui/state.js'); return s.unsaved(); })()`, &dirty)
		assert.False(t, dirty, "%s: unchanged, yet the form holds unsaved edits", fx.name)

		// a save of the untouched form writes nothing and opens no review
		b.eval(`document.getElementById('toast').textContent = ''`, nil)
		b.run(chromedp.Click("#save", chromedp.ByQuery))
		b.waitFor(`document.getElementById('toast').textContent.includes('Nothing to save') || document.getElementById('confirm').open`)
		var review string
		b.eval(`document.getElementById('confirm').open ? document.getElementById('confirm').innerText : ''`, &review)
		assert.Empty(t, review, "%s: the review of an unchanged popup shows changes", fx.name)
		if review != "" {
			b.answerDialog("", false)
		}

		// leaving asks nothing
		b.run(chromedp.Click(`nav a[data-nav="audit"]`, chromedp.ByQuery))
		b.waitFor(`location.hash === '#/audit' || document.getElementById('confirm').open`)
		var asked bool
		b.eval(`document.getElementById('confirm').open`, &asked)
		assert.False(t, asked, "%s: leaving an unchanged popup asks about unsaved changes", fx.name)
		if asked {
			b.answerDialog("unsaved", true)
		}
		res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
		assert.EqualValues(t, 1, res.Body["revision"], "%s: nothing written", fx.name)
	}
}

// TestConsoleTranslationTableOfALivePopupIsReviewed: the translators' table uploaded for a live
// popup opens the review with the diff the form's save would show; Cancel sends nothing, Publish
// writes it. An upload that changes nothing writes nothing.
func TestConsoleTranslationTableOfALivePopupIsReviewed(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.CreatePopup(t, apitest.PopupSpec("table-live", map[string]any{"status": "active", "image_url": "", "translations": map[string]any{
		"de": map[string]any{"title": "Hallo", "content": "Inhalt", "buttons": []map[string]any{{"text": "Jetzt shoppen"}}},
	}}))

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 1)
	upload := func(name, table string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(path, []byte(table), 0o644))
		b.run(chromedp.SetUploadFiles("#translations-file", []string{path}, chromedp.ByQuery), chromedp.Click("#translations-upload", chromedp.ByQuery))
	}
	same := "\ufeffkey,default,de\ntitle,table-live title,Hallo\ncontent,hello,Inhalt\nbuttons[0].text,Open,Jetzt shoppen\n"
	upload("same.csv", same)
	b.waitFor(`document.querySelector('#translations-csv-out .alert.info')`)
	assert.Contains(t, b.text("#translations-csv-out"), "changes nothing")

	changed := "key,default,de\ntitle,table-live title,Servus\ncontent,hello,Inhalt\nbuttons[0].text,Open,Jetzt shoppen\n"
	upload("changed.csv", changed)
	var rows [][]string
	b.answerDialogCheck("Publish these translations", false, func() {
		b.eval(`[...document.querySelectorAll('#confirm table.diff tbody tr')].map(tr => [...tr.children].map(c => c.textContent))`, &rows)
		assert.Equal(t, [][]string{{"translation › de › title", "Hallo", "Servus"}}, rows)
		b.axeCheck("translation table review")
	})
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.EqualValues(t, 1, res.Body["revision"], "cancelled: nothing written")

	upload("changed.csv", changed)
	b.answerDialog("Publish these translations", true)
	b.waitFor(`document.querySelector('#popup-form[data-revision="2"]')`)
	res = in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Equal(t, "Servus", res.Body["translations"].(map[string]any)["de"].(map[string]any)["title"])
}
