package decide_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// withTranslations translates the popup's own content (title "hi") into each tag: title
// "hi <tag>".
func withTranslations(tags ...string) func(*popup.Popup) {
	return func(p *popup.Popup) {
		for _, tag := range tags {
			p.Translations = append(p.Translations, popup.Translation{Locale: tag, Title: "hi " + tag})
		}
	}
}

// fiveLocales are the five translations of the benchmark and of docs/PERFORMANCE.md's bench case.
var fiveLocales = []string{"de", "es", "fr", "ja", "pt"}

func freshDecider(popups ...popup.Popup) *decide.Decider {
	holder := &snapshot.Holder{}
	holder.Store(snapshot.BuildWith(1, popups, t0, popup.LinkSchemes{}, nil))
	return &decide.Decider{Snapshots: holder, Users: freshUsers{}, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
		Metrics: decide.NewMetrics(nil)}
}

// TestDecideAnswersInTheBestLocale: the exact tag, then the tag without region or script, then
// the popup's own content, and the answer names which.
func TestDecideAnswersInTheBestLocale(t *testing.T) {
	t.Parallel()
	d := freshDecider(active(1, withTranslations("pt", "pt-BR", "zh-Hans")))
	tests := []struct {
		lang       string
		wantLocale string
		wantTitle  string
	}{
		{lang: "pt-BR", wantLocale: "pt-BR", wantTitle: "hi pt-BR"},
		{lang: "pt_br", wantLocale: "pt-BR", wantTitle: "hi pt-BR"},
		{lang: "pt-PT", wantLocale: "pt", wantTitle: "hi pt"},
		{lang: "zh-Hans-CN", wantLocale: "zh-Hans", wantTitle: "hi zh-Hans"},
		{lang: "zh-TW", wantLocale: "default", wantTitle: "hi"},
		{lang: "en", wantLocale: "default", wantTitle: "hi"},
		{lang: "", wantLocale: "default", wantTitle: "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			req := iosReq
			req.Lang = tt.lang
			a := d.Decide(context.Background(), req, t0)
			require.Equal(t, decide.Shown, a.Kind)
			assert.Equal(t, tt.wantLocale, a.Locale)
			var body struct{ Title string }
			require.NoError(t, json.Unmarshal(a.Body, &body))
			assert.Equal(t, tt.wantTitle, body.Title)
		})
	}
}

// TestDecideAnswersAVariantInTheBestLocale: a variant's translations are its own.
func TestDecideAnswersAVariantInTheBestLocale(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlNone)
	e.Variants[0].Translations = []popup.Translation{{Locale: "de", Title: "variant a de"}}
	req := iosReq
	req.UID, req.Lang = uidIn(t, e, 0), "de-AT"
	d := freshDecider(active(1, func(p *popup.Popup) { p.Experiment = e; withTranslations("de")(p) }))

	a := d.Decide(context.Background(), req, t0)

	require.Equal(t, decide.Shown, a.Kind)
	assert.Equal(t, "a", a.Variant)
	assert.Equal(t, "de", a.Locale)
	assert.Contains(t, string(a.Body), `"title":"variant a de"`)
}

// BenchmarkDecideTranslations is a decision that shows a popup (recorded in a store that costs
// nothing) without translations, and with five for a lang that matches the last of them only
// after dropping its region (the longest search five translations make) and for one that
// matches none: the difference is what choosing the language costs (docs/PERFORMANCE.md).
func BenchmarkDecideTranslations(b *testing.B) {
	for _, bc := range []struct {
		name string
		tags []string
		lang string
	}{
		{"no translations", nil, "pt-BR"},
		{"five translations, pt-BR to pt", fiveLocales, "pt-BR"},
		{"five translations, none matches", fiveLocales, "it-IT"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := freshDecider(active(1, withTranslations(bc.tags...)))
			ctx := context.Background()
			req := iosReq
			req.Lang = bc.lang
			if a := d.Decide(ctx, req, t0); a.Kind != decide.Shown {
				b.Fatalf("want a popup, got %v", a.Kind)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Decide(ctx, req, t0)
			}
		})
	}
}
