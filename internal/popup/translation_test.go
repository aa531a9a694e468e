package popup_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// translated is a minimal valid Input with a title, content and two buttons, translated into
// the given locales.
func translated(locales ...string) popup.Input {
	in := popup.Input{Name: "sale", Creative: popup.Creative{Title: "Sale", Content: "Half off", LinkURL: "https://example.com/sale",
		Buttons: []popup.Button{{Text: "Open", LinkURL: "https://example.com/open"}, {Text: "Later"}}}}
	for _, l := range locales {
		in.Translations = append(in.Translations, popup.Translation{Locale: l, Title: l + " title", Content: l + " content",
			Buttons: []popup.Button{{Text: l + " open"}, {Text: l + " later"}}})
	}
	return in
}

func TestCanonicalLocale(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give   string
		want   string
		wantOK bool
	}{
		{give: "en", want: "en", wantOK: true},
		{give: "pt-br", want: "pt-BR", wantOK: true},
		{give: "ZH-hans", want: "zh-Hans", wantOK: true},
		{give: "zh-hant-tw", want: "zh-Hant-TW", wantOK: true},
		{give: "es-419", want: "es-419", wantOK: true},
		{give: "fil", want: "fil", wantOK: true},
		{give: ""},
		{give: "e"},
		{give: "engl"},
		{give: "pt_BR"},
		{give: "pt-"},
		{give: "en-US-x"},
		{give: "en-1234"},
		{give: "zh-Hans-CN-x"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, ok := popup.CanonicalLocale(tt.give)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTranslationsAreNormalized(t *testing.T) {
	t.Parallel()
	p, err := translated("zh-hans", "pt-br", "en").BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	var tags []string
	for _, tr := range p.Translations {
		tags = append(tags, tr.Locale)
	}
	assert.Equal(t, []string{"en", "pt-BR", "zh-Hans"}, tags, "canonical case, sorted by tag")

	p, err = translated().BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	assert.Nil(t, p.Translations, "no translations: nil, so the stored document is as before translations")
}

func TestTranslationsRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mod  func(*popup.Input)
		want []popup.FieldError
	}{
		{
			name: "a button's text, named by language and index",
			mod:  func(in *popup.Input) { in.Translations[0].Buttons[1].Text = " " },
			want: []popup.FieldError{{Field: "translations.pt-BR.buttons[1].text", Message: "is required"}},
		},
		{
			name: "fewer buttons than the default content",
			mod:  func(in *popup.Input) { in.Translations[0].Buttons = in.Translations[0].Buttons[:1] },
			want: []popup.FieldError{{Field: "translations.pt-BR.buttons",
				Message: "must have 2 buttons, as the default content does: a click's button index names the same button in every language"}},
		},
		{
			name: "more buttons than the default content",
			mod: func(in *popup.Input) {
				in.Translations[0].Buttons = append(in.Translations[0].Buttons, popup.Button{Text: "extra"})
			},
			want: []popup.FieldError{{Field: "translations.pt-BR.buttons",
				Message: "must have 2 buttons, as the default content does: a click's button index names the same button in every language"}},
		},
		{
			name: "a missing title where the default has one",
			mod:  func(in *popup.Input) { in.Translations[0].Title = "" },
			want: []popup.FieldError{{Field: "translations.pt-BR.title", Message: "is required"}},
		},
		{
			name: "a title too long",
			mod:  func(in *popup.Input) { in.Translations[0].Title = strings.Repeat("é", 201) },
			want: []popup.FieldError{{Field: "translations.pt-BR.title", Message: "must be at most 200 characters"}},
		},
		{
			name: "a link of a scheme not allowed",
			mod:  func(in *popup.Input) { in.Translations[0].Buttons[0].LinkURL = "javascript:alert(1)" },
			want: []popup.FieldError{{Field: "translations.pt-BR.buttons[0].link_url",
				Message: `scheme "javascript" is not allowed: must be an absolute URL with one of the schemes http, https`}},
		},
		{
			name: "a malformed tag",
			mod:  func(in *popup.Input) { in.Translations[0].Locale = "portuguese" },
			want: []popup.FieldError{{Field: "translations.portuguese", Message: "must be keyed by " + popup.LocaleRule}},
		},
		{
			name: "one tag twice, in two cases",
			mod: func(in *popup.Input) {
				in.Translations = append(in.Translations, in.Translations[0])
				in.Translations[1].Locale = "PT-br"
			},
			want: []popup.FieldError{{Field: "translations.pt-BR", Message: "is given twice (tags compare case-insensitively)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := translated("pt-BR")
			tt.mod(&in)
			_, err := in.BuildWith(popup.LinkSchemes{})
			assert.Equal(t, tt.want, fieldErrors(t, err))
		})
	}
}

func TestTranslationsAtMostFifty(t *testing.T) {
	t.Parallel()
	var tags []string
	for a := 'a'; a <= 'z'; a++ {
		tags = append(tags, string([]rune{'a', a}), string([]rune{'b', a}))
	}
	_, err := translated(tags[:popup.MaxTranslations]...).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	_, err = translated(tags[:popup.MaxTranslations+1]...).BuildWith(popup.LinkSchemes{})
	assert.Equal(t, []popup.FieldError{{Field: "translations", Message: "must have at most 50 languages"}}, fieldErrors(t, err))
}

func TestVariantTranslationsAreValidatedAgainstTheVariant(t *testing.T) {
	t.Parallel()
	in := translated()
	in.Experiment = &popup.Experiment{Status: popup.ExperimentDraft, CoveragePercent: 100, Variants: []popup.Variant{
		{Key: "a", Weight: 50, Creative: popup.Creative{Title: "A", Buttons: []popup.Button{{Text: "Go"}}}},
		{Key: "b", Weight: 50, Creative: popup.Creative{Title: "B",
			Translations: []popup.Translation{{Locale: "de", Title: "B de", Buttons: []popup.Button{{Text: "Los"}}}}}},
	}}
	_, err := in.BuildWith(popup.LinkSchemes{})
	assert.Equal(t, []popup.FieldError{{Field: "experiment.variants[1].translations.de.buttons",
		Message: "must have 0 buttons, as the default content does: a click's button index names the same button in every language"}},
		fieldErrors(t, err))
}

func TestLocalizedKeepsTheDefaultLinksWhereTheTranslationHasNone(t *testing.T) {
	t.Parallel()
	p, err := translated("pt-BR").BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	tr := p.Translation("pt-BR")
	require.NotNil(t, tr)
	tr.ImageURL = "https://example.com/pt.png"

	got := p.Localized(tr)

	assert.Equal(t, popup.Creative{Title: "pt-BR title", Content: "pt-BR content", ImageURL: "https://example.com/pt.png",
		LinkURL: "https://example.com/sale", Ext: p.Ext,
		Buttons: []popup.Button{{Text: "pt-BR open", LinkURL: "https://example.com/open"}, {Text: "pt-BR later"}}}, got)
}

// TestLocaleTableChoose pins the choice for a tag: the exact tag, then the tag less its region,
// then the same language (and script) in another region (the first in tag order), then shorter
// tags, then nothing (the creative's own content); case and "_" do not matter. A list is tried
// language by language, by weight.
func TestLocaleTableChoose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lang string
		have []string
		want int
		how  popup.LocaleMatch
	}{
		{lang: "pt-BR", have: []string{"pt", "pt-BR"}, want: 1, how: popup.MatchExact},
		{lang: "pt-br", have: []string{"pt", "pt-BR"}, want: 1, how: popup.MatchExact},
		{lang: "pt_BR", have: []string{"pt", "pt-BR"}, want: 1, how: popup.MatchExact},
		{lang: "pt-PT", have: []string{"pt", "pt-BR"}, want: 0, how: popup.MatchShorterTag},
		{lang: "pt-PT", have: []string{"de", "pt-BR"}, want: 1, how: popup.MatchRegion},
		{lang: "pt", have: []string{"pt-BR"}, want: 0, how: popup.MatchRegion},
		{lang: "pt-PT", have: []string{"pt-AO", "pt-BR"}, want: 0, how: popup.MatchRegion},
		{lang: "es-MX", have: []string{"es-419", "es-ES"}, want: 0, how: popup.MatchRegion},
		{lang: "zh-Hans-CN", have: []string{"zh", "zh-Hans"}, want: 1, how: popup.MatchShorterTag},
		{lang: "zh-Hant-HK", have: []string{"zh", "zh-Hans-CN", "zh-Hant-TW"}, want: 2, how: popup.MatchRegion},
		{lang: "zh-Hant", have: []string{"zh", "zh-Hant-TW"}, want: 1, how: popup.MatchRegion},
		{lang: "zh-Hant-TW", have: []string{"zh", "zh-Hans"}, want: 0, how: popup.MatchShorterTag},
		{lang: "de-CH", have: []string{"pt-BR"}, want: -1, how: popup.MatchDefault},
		{lang: "fr", have: []string{"pt", "pt-BR"}, want: -1, how: popup.MatchDefault},
		{lang: "", have: []string{"pt"}, want: -1, how: popup.MatchDefault},
		{lang: "pt", have: nil, want: -1, how: popup.MatchDefault},
		{lang: "pt-BR,pt;q=0.9,en;q=0.8", have: []string{"en", "pt-BR"}, want: 1, how: popup.MatchExact},
		{lang: "pt-PT,en;q=0.8", have: []string{"en", "pt-BR"}, want: 1, how: popup.MatchRegion},
		{lang: "it, en;q=0.5, pt;q=0.7", have: []string{"en", "pt"}, want: 1, how: popup.MatchExact},
		{lang: "en;q=0.5,de;q=0.5", have: []string{"de", "en"}, want: 1, how: popup.MatchExact},
		{lang: "pt;q=0,en", have: []string{"en", "pt"}, want: 0, how: popup.MatchExact},
		{lang: "*", have: []string{"en"}, want: -1, how: popup.MatchDefault},
		{lang: "fr-CA,fr;q=0.9", have: []string{"de"}, want: -1, how: popup.MatchDefault},
		{lang: "x-very-long-private-tag,de", have: []string{"de"}, want: 0, how: popup.MatchExact},
	}
	for _, tt := range tests {
		t.Run(tt.lang+"/"+strings.Join(tt.have, ","), func(t *testing.T) {
			table := popup.NewLocaleTable(tt.have)
			i, how := table.Choose(tt.lang)
			assert.Equal(t, tt.want, i)
			assert.Equal(t, tt.how, how)
		})
	}
}

// TestValidLang: a bare tag and any well-formed Accept-Language value are valid, whatever their
// languages; anything else is not.
func TestValidLang(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want bool
	}{
		{"", true},
		{"pt-BR", true},
		{"pt_br", true},
		{"pt-BR,pt;q=0.9,en;q=0.8", true},
		{"en-US,en;q=0.9,*;q=0.5", true},
		{"da, en-gb;q=0.8, en;q=0.7", true},
		{"de ; Q=1.000", true},
		{"en,,fr", true},
		{"x-klingon-kli-very-long-private-use", true},
		{"*", true},
		{"pt-BR;q=2", false},
		{"pt-BR;q=0.12345", false},
		{"pt-BR;q=abc", false},
		{"pt-BR;level=1", false},
		{"pt BR", false},
		{"<script>", false},
		{"pt-BR;", false},
		{"é", false},
		{strings.Repeat("a,", 300), false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			assert.Equal(t, tt.want, popup.ValidLang(tt.give))
		})
	}
}

// TestPrimaryLang: targeting compares the list's best language.
func TestPrimaryLang(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "pt-BR", popup.PrimaryLang("pt-BR"))
	assert.Equal(t, "pt-BR", popup.PrimaryLang("pt-BR,pt;q=0.9"))
	assert.Equal(t, "de", popup.PrimaryLang("en;q=0.5, de"))
	assert.Equal(t, "", popup.PrimaryLang("*"))
	assert.Equal(t, "", popup.PrimaryLang(""))
}

func TestLocaleTableChooseDoesNotAllocate(t *testing.T) {
	table := popup.NewLocaleTable([]string{"de", "en", "es", "fr", "pt-BR"})
	for _, lang := range []string{"pt-BR", "pt-PT", "it-IT,pt-PT;q=0.9,en;q=0.8"} {
		allocs := testing.AllocsPerRun(100, func() { _, _ = table.Choose(lang) })
		assert.Zero(t, allocs, lang)
	}
}

// BenchmarkLocaleTableChoose is the choice alone for five translations: a bare tag, a region
// fallback, and a browser's Accept-Language list (docs/PERFORMANCE.md, Translations).
func BenchmarkLocaleTableChoose(b *testing.B) {
	table := popup.NewLocaleTable([]string{"de", "es", "fr", "ja", "pt-BR"})
	for _, lang := range []string{"pt-BR", "pt-PT", "it-IT,pt-PT;q=0.9,en;q=0.8"} {
		b.Run(lang, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_, _ = table.Choose(lang)
			}
		})
	}
}
