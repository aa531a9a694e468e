package popup

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Translation is a creative's content in one language (docs/CONTRACT.md §13). Its texts replace
// the creative's; an empty image_url or link_url (a button's too) keeps the creative's own, so a
// translator only writes words. It has exactly as many buttons as the creative: a click's button
// index names the same button in every language.
type Translation struct {
	// Locale is a BCP 47 tag in its canonical case: language, then optionally script and region
	// ("pt-BR", "zh-Hans", "en").
	Locale   string
	Title    string
	Content  string
	ImageURL string
	LinkURL  string
	Buttons  []Button
}

// MaxTranslations bounds the translations of one creative (the popup's own, or a variant's).
const MaxTranslations = 50

// DefaultLocale is what an answer names when it shows the creative's own content.
const DefaultLocale = "default"

// LocaleRule describes a well-formed translation key in the words every error message uses.
const LocaleRule = "a BCP 47 language tag: a language of 2-3 letters, then optionally a script of 4 letters and a region of 2 letters or 3 digits (en, pt-BR, zh-Hans, es-419)"

// CanonicalLocale returns tag in BCP 47's canonical case (language lower, script title, region
// upper), and whether tag is language[-script][-region] at all. "_" is not a separator here: a
// stored key has one spelling.
func CanonicalLocale(tag string) (string, bool) {
	parts := strings.Split(tag, "-")
	if len(parts) > 3 || !isLetters(parts[0], 2, 3) {
		return "", false
	}
	out := []string{strings.ToLower(parts[0])}
	rest := parts[1:]
	if len(rest) > 0 && isLetters(rest[0], 4, 4) {
		s := strings.ToLower(rest[0])
		out = append(out, strings.ToUpper(s[:1])+s[1:])
		rest = rest[1:]
	}
	if len(rest) > 0 && (isLetters(rest[0], 2, 2) || isDigits(rest[0], 3)) {
		out = append(out, strings.ToUpper(rest[0]))
		rest = rest[1:]
	}
	if len(rest) > 0 {
		return "", false
	}
	return strings.Join(out, "-"), true
}

func isLetters(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// normalizeTranslations puts c's translations in their canonical shape: locales in canonical case
// (a malformed one is left for validate to report), sorted by locale, buttons [] rather than nil,
// and nil rather than an empty list, so that a creative without translations encodes as before
// they existed.
func (c *Creative) normalizeTranslations() {
	if len(c.Translations) == 0 {
		c.Translations = nil
		return
	}
	for i := range c.Translations {
		t := &c.Translations[i]
		if tag, ok := CanonicalLocale(t.Locale); ok {
			t.Locale = tag
		}
		t.Buttons = nonNil(t.Buttons)
	}
	slices.SortStableFunc(c.Translations, func(a, b Translation) int { return cmp.Compare(a.Locale, b.Locale) })
}

// validateTranslations checks c's translations under prefix+"translations.<locale>": the tag, the
// same limits and links as the creative's own content, a title and content wherever the creative
// has one (an empty one would show a blank where the default has words), and the creative's
// number of buttons.
func (c Creative) validateTranslations(v *validator, prefix string, links LinkSchemes) {
	if len(c.Translations) > MaxTranslations {
		v.add(prefix+"translations", "must have at most "+strconv.Itoa(MaxTranslations)+" languages")
	}
	for i, t := range c.Translations {
		tp := prefix + "translations." + t.Locale
		if _, ok := CanonicalLocale(t.Locale); !ok {
			v.add(tp, "must be keyed by "+LocaleRule)
			continue
		}
		if i > 0 && c.Translations[i-1].Locale == t.Locale {
			v.add(tp, "is given twice (tags compare case-insensitively)")
			continue
		}
		v.text(tp+".title", t.Title, min(1, len(c.Title)), maxTitleLen)
		v.text(tp+".content", t.Content, min(1, len(c.Content)), maxContentLen)
		v.url(tp+".image_url", t.ImageURL, isWebScheme, "http, https")
		v.url(tp+".link_url", t.LinkURL, links.Allows, links.String())
		if len(t.Buttons) != len(c.Buttons) {
			v.add(tp+".buttons", "must have "+strconv.Itoa(len(c.Buttons))+" buttons, as the default content does: a click's button index names the same button in every language")
		}
		for j, b := range t.Buttons {
			bp := tp + ".buttons[" + strconv.Itoa(j) + "]"
			v.text(bp+".text", strings.TrimSpace(b.Text), 1, maxButtonText)
			v.url(bp+".link_url", b.LinkURL, links.Allows, links.String())
		}
	}
}

// Localized is c as shown in t's language: t's texts, t's links where it has them and c's
// otherwise, c's ext. t has c's number of buttons (validateTranslations).
func (c Creative) Localized(t *Translation) Creative {
	out := Creative{Title: t.Title, Content: t.Content, ImageURL: cmp.Or(t.ImageURL, c.ImageURL), ImageAlt: c.ImageAlt,
		LinkURL: cmp.Or(t.LinkURL, c.LinkURL), Buttons: make([]Button, len(c.Buttons)), Ext: c.Ext}
	for i, b := range c.Buttons {
		out.Buttons[i] = b
		if i < len(t.Buttons) {
			out.Buttons[i] = Button{Text: t.Buttons[i].Text, LinkURL: cmp.Or(t.Buttons[i].LinkURL, b.LinkURL)}
		}
	}
	return out
}

// Translation returns c's translation for locale (canonical case), nil for none.
func (c *Creative) Translation(locale string) *Translation {
	for i := range c.Translations {
		if c.Translations[i].Locale == locale {
			return &c.Translations[i]
		}
	}
	return nil
}

func translationsEqual(a, b []Translation) bool {
	return slices.EqualFunc(a, b, func(x, y Translation) bool {
		return x.Locale == y.Locale && x.Title == y.Title && x.Content == y.Content && x.ImageURL == y.ImageURL &&
			x.LinkURL == y.LinkURL && slices.Equal(x.Buttons, y.Buttons)
	})
}

// --- choice on the hot path ---------------------------------------------------------------------

// LocaleKey is a language tag as the answer's choice compares it: ASCII lower case, "_" read as
// "-", zero-padded to 16 bytes and held as two machine words, so that two keys compare in two
// instructions.
type LocaleKey struct{ lo, hi uint64 }

// NewLocaleKey is tag's key; ok is false for "" and for anything longer than 16 bytes or holding
// a NUL, which no translation can match.
func NewLocaleKey(tag string) (LocaleKey, bool) {
	var f LocaleFallback
	f.Set(tag)
	return f.keys[0], f.n > 0
}

// prefix is k's first n bytes (0 < n < 16), the rest zero.
func (k LocaleKey) prefix(n int) LocaleKey {
	if n >= 8 {
		return LocaleKey{lo: k.lo, hi: k.hi & (1<<(8*(n-8)) - 1)}
	}
	return LocaleKey{lo: k.lo & (1<<(8*n) - 1)}
}

// LocaleFallback is the keys a request's lang is matched against, best first: the exact tag, then
// the tag less its last subtag, down to the bare language (pt-BR → pt; zh-Hans-CN → zh-Hans → zh),
// as RFC 4647's lookup does. It is built once per request (Set) and does not allocate.
type LocaleFallback struct {
	keys [3]LocaleKey
	n    int
}

// NewLocaleFallback is lang's fallback chain (Set).
func NewLocaleFallback(lang string) LocaleFallback {
	var f LocaleFallback
	f.Set(lang)
	return f
}

// Set makes f lang's fallback chain; empty for "" or a lang no translation can match (longer
// than 16 bytes, or holding a NUL). The key is built in two words as lang is read, lower-cased
// with "_" as "-": no buffer to copy on the hot path.
func (f *LocaleFallback) Set(lang string) {
	f.n = 0
	if lang == "" || len(lang) > maxCodeLen {
		return
	}
	var lo, hi uint64
	last, prev := 0, 0 // the last two separators' positions; 0 = none (a tag never starts with one)
	for i := 0; i < len(lang); i++ {
		c := lang[i]
		switch {
		case c == 0:
			return
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c == '_' || c == '-':
			c = '-'
			prev, last = last, i
		}
		if i < 8 {
			lo |= uint64(c) << (8 * i)
		} else {
			hi |= uint64(c) << (8 * (i - 8))
		}
	}
	k := LocaleKey{lo: lo, hi: hi}
	f.keys[0], f.n = k, 1
	if last > 0 {
		f.keys[1], f.n = k.prefix(last), 2
	}
	if prev > 0 {
		f.keys[2], f.n = k.prefix(prev), 3
	}
}

// Choose returns the index in keys (one creative's translation keys) of the best match for the
// chain, or -1 when none matches and the creative's own content is shown.
func (f *LocaleFallback) Choose(keys []LocaleKey) int {
	for j := 0; j < f.n; j++ {
		want := f.keys[j]
		for i, k := range keys {
			if k == want {
				return i
			}
		}
	}
	return -1
}
