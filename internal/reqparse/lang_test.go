package reqparse

import (
	"strings"
	"testing"

	"popupsvc/internal/popup"
)

// FuzzLang fuzzes the homepage's lang (docs/CONTRACT.md §13), which popup parses on the hot
// path: any lang is either refused or chosen for without a panic; the best language of a list
// lies within it and is a valid range.
func FuzzLang(f *testing.F) {
	for _, s := range []string{"pt-BR", "pt-BR,pt;q=0.9,en;q=0.8", "*", " , ;q=1", "en;q=0.5,de", "a;q=1.000,b;Q=0"} {
		f.Add(s)
	}
	table := popup.NewLocaleTable([]string{"de", "en", "pt-BR", "zh-Hant-TW"})
	f.Fuzz(func(t *testing.T, lang string) {
		if !popup.ValidLang(lang) {
			return
		}
		i, how := table.Choose(lang)
		if (i < 0) != (how == popup.MatchDefault) || i >= table.Len() {
			t.Fatalf("Choose(%q) = %d, %v", lang, i, how)
		}
		if p := popup.PrimaryLang(lang); p != "" && (!strings.Contains(lang, p) || !popup.ValidLang(p)) {
			t.Fatalf("PrimaryLang(%q) = %q", lang, p)
		}
	})
}
