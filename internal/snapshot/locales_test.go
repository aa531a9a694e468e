package snapshot

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
)

// TestEntryShownInPreEncodesEveryLocale: every translation of the popup and of each running
// variant is encoded when the snapshot is built, with the default content's links where the
// translation has none; the choice falls back to the default.
func TestEntryShownInPreEncodesEveryLocale(t *testing.T) {
	t.Parallel()
	p := popuptest.Full()
	p.Status = popup.StatusActive
	p.Translations[0].LinkURL = ""
	links, err := popup.ParseLinkSchemes([]string{"https", "app"})
	require.NoError(t, err)
	s := BuildWith(1, []popup.Popup{p}, t0, links, nil)
	require.Empty(t, s.Problems)
	e := s.Entry(p.ID)
	require.NotNil(t, e)
	assert.Equal(t, []string{"pt-BR", "zh-Hans"}, e.Locales.Tags())

	tests := []struct {
		name       string
		arm        int
		lang       string
		wantLocale string
		wantTitle  string
		wantLink   string
	}{
		{name: "own content, a translation without a link", arm: -1, lang: "pt-BR", wantLocale: "pt-BR", wantTitle: "pt-BR title", wantLink: "app://sale"},
		{name: "own content, by script", arm: -1, lang: "zh-Hans-CN", wantLocale: "zh-Hans", wantTitle: "zh-Hans title", wantLink: "app://sale/zh-Hans"},
		{name: "own content, no match", arm: -1, lang: "de", wantLocale: "default", wantTitle: "Spring", wantLink: "app://sale"},
		{name: "a variant's translation", arm: 1, lang: "de-CH", wantLocale: "de", wantTitle: "de title", wantLink: "app://b/de"},
		{name: "a variant, no match", arm: 1, lang: "pt-BR", wantLocale: "default", wantTitle: "B", wantLink: "app://b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, locale, _ := e.ShownIn(tt.arm, tt.lang)
			assert.Equal(t, tt.wantLocale, locale)
			var got publicPopup
			require.NoError(t, json.Unmarshal(body, &got))
			assert.Equal(t, p.ID, got.ID)
			assert.Equal(t, tt.wantTitle, got.Title)
			assert.Equal(t, tt.wantLink, got.LinkURL)
			assert.Len(t, got.Buttons, 1, "a translation shows the creative's buttons")
		})
	}
}

// BenchmarkShownIn is the choice of language alone, for a popup without translations and one
// with five (docs/PERFORMANCE.md, Translations): what a shown answer pays on top of the decision.
func BenchmarkShownIn(b *testing.B) {
	for _, bc := range []struct {
		name string
		tags []string
		lang string
	}{
		{"no translations", nil, "pt-BR"},
		{"five translations, pt-BR to pt", []string{"de", "es", "fr", "ja", "pt"}, "pt-BR"},
		{"five translations, none matches", []string{"de", "es", "fr", "ja", "pt"}, "it-IT"},
		{"five translations, pt-PT to pt-BR", []string{"de", "es", "fr", "ja", "pt-BR"}, "pt-PT"},
		{"five translations, a browser's list", []string{"de", "es", "fr", "ja", "pt-BR"}, "it-IT,pt-PT;q=0.9,en;q=0.8"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := popup.Popup{ID: 1, Name: "p", Status: popup.StatusActive, Targeting: popup.Targeting{RolloutPercent: 100},
				Creative: popup.Creative{Title: "hi"}}
			for _, tag := range bc.tags {
				p.Translations = append(p.Translations, popup.Translation{Locale: tag, Title: "hi " + tag})
			}
			e := BuildWith(1, []popup.Popup{p}, t0, popup.LinkSchemes{}, nil).Entry(1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _, _ = e.ShownIn(-1, bc.lang)
			}
		})
	}
}
