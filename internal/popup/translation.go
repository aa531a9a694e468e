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
	// A copy: c's slice is shared with the popup it was copied from (a snapshot's, which
	// concurrent requests read; a draft preview compiles the live popups again).
	c.Translations = slices.Clone(c.Translations)
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

// prefix is k's first n bytes (0 < n < 16), the rest zero.
func (k LocaleKey) prefix(n int) LocaleKey {
	if n >= 8 {
		return LocaleKey{lo: k.lo, hi: k.hi & (1<<(8*(n-8)) - 1)}
	}
	return LocaleKey{lo: k.lo & (1<<(8*n) - 1)}
}

// LocaleFallback is the keys a tag is matched against, best first: the exact tag, then the tag
// less its last subtag, down to the bare language (pt-BR → pt; zh-Hans-CN → zh-Hans → zh), as
// RFC 4647's lookup does. It is built once per tag (Set) and does not allocate.
type LocaleFallback struct {
	keys [3]LocaleKey
	n    int
	// region: the tag's last subtag is a region (2 letters or 3 digits after the language),
	// so keys[1] is the tag less its region.
	region bool
	// language is the tag's first subtag, which every key of the chain shares.
	language LocaleKey
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
	f.n, f.region = 0, false
	if lang == "" || len(lang) > maxCodeLen {
		return
	}
	var lo, hi uint64
	first, last, prev := 0, 0, 0 // the first and the last two separators' positions; 0 = none
	letters, digits := 0, 0      // in the subtag being read
	for i := 0; i < len(lang); i++ {
		c := lang[i]
		switch {
		case c == 0:
			return
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
			letters++
		case c >= 'a' && c <= 'z':
			letters++
		case c >= '0' && c <= '9':
			digits++
		case c == '_' || c == '-':
			c = '-'
			prev, last = last, i
			if first == 0 {
				first = i
			}
			letters, digits = 0, 0
		}
		if i < 8 {
			lo |= uint64(c) << (8 * i)
		} else {
			hi |= uint64(c) << (8 * (i - 8))
		}
	}
	k := LocaleKey{lo: lo, hi: hi}
	f.keys[0], f.n, f.language = k, 1, k
	if first > 0 {
		f.language = k.prefix(first)
	}
	if last > 0 {
		f.keys[1], f.n = k.prefix(last), 2
		rest := len(lang) - last - 1
		f.region = rest == 2 && letters == 2 || rest == 3 && digits == 3
	}
	if prev > 0 {
		f.keys[2], f.n = k.prefix(prev), 3
	}
}

func indexKey(keys []LocaleKey, want LocaleKey) int {
	for i, k := range keys {
		if k == want {
			return i
		}
	}
	return -1
}

// LocaleMatch is how a request's lang chose the language shown (docs/CONTRACT.md §13).
type LocaleMatch uint8

const (
	// MatchDefault: no translation fits; the creative's own content is shown.
	MatchDefault LocaleMatch = iota
	// MatchExact: a translation has the requested tag (pt-BR for pt-BR).
	MatchExact
	// MatchShorterTag: a translation has the tag less its last subtags (pt for pt-BR).
	MatchShorterTag
	// MatchRegion: a translation has the same language in another region (pt-BR for pt-PT or pt).
	MatchRegion
)

// String is m as explain names it.
func (m LocaleMatch) String() string {
	switch m {
	case MatchExact:
		return "exact"
	case MatchShorterTag:
		return "shorter_tag"
	case MatchRegion:
		return "region"
	}
	return "default"
}

// LocaleTable is one creative's translations prepared, when the snapshot is built, for the
// choice of a request's language: each translation's key, and for each language (with its
// script, if any) that some translation has in a region, the translation a request of that
// language in another region falls back to: the first in tag order (pt-AO before pt-BR).
// Empty without translations.
type LocaleTable struct {
	keys      []LocaleKey
	regional  []regionalLocale
	languages []LocaleKey // the translations' languages (first subtags), each once
}

// regionalLocale: a request of language base (pt, zh-hans) in another region gets translation i.
type regionalLocale struct {
	base LocaleKey
	i    int
}

// NewLocaleTable prepares the choice among tags (canonical BCP 47 tags, in the creative's order).
func NewLocaleTable(tags []string) LocaleTable {
	if len(tags) == 0 {
		return LocaleTable{}
	}
	t := LocaleTable{keys: make([]LocaleKey, len(tags))}
	for i, tag := range tags {
		f := NewLocaleFallback(tag) // a valid tag is at most 12 bytes
		t.keys[i] = f.keys[0]
		if indexKey(t.languages, f.language) < 0 {
			t.languages = append(t.languages, f.language)
		}
		if f.region && t.regionalIndex(f.keys[1]) < 0 {
			t.regional = append(t.regional, regionalLocale{base: f.keys[1], i: i})
		}
	}
	return t
}

// Len is the number of translations.
func (t *LocaleTable) Len() int { return len(t.keys) }

func (t *LocaleTable) regionalIndex(base LocaleKey) int {
	for _, r := range t.regional {
		if r.base == base {
			return r.i
		}
	}
	return -1
}

// Choose returns the index of the translation shown for a request's lang (a bare tag or an
// Accept-Language value: ValidLang), and how it was chosen; -1 and MatchDefault for the
// creative's own content. A list is tried language by language, by quality (the first listed
// wins a tie): the whole fallback of the first language that any translation fits wins. It does
// not allocate.
func (t *LocaleTable) Choose(lang string) (int, LocaleMatch) {
	if len(t.keys) == 0 || lang == "" {
		return -1, MatchDefault
	}
	if !isLangList(lang) {
		return t.chooseTag(lang)
	}
	if len(lang) > MaxLangLen {
		return -1, MatchDefault // never a validated lang
	}
	var prefs langPrefs
	prefs.parse(lang)
	for _, p := range prefs.list[:prefs.n] {
		if i, m := t.chooseTag(lang[p.start:p.end]); i >= 0 {
			return i, m
		}
	}
	return -1, MatchDefault
}

// chooseTag is Choose for one tag: exact, then the tag less its region, then the same language
// (and script) in another region, then shorter tags down to the bare language.
func (t *LocaleTable) chooseTag(tag string) (int, LocaleMatch) {
	var f LocaleFallback
	f.Set(tag)
	if f.n == 0 || indexKey(t.languages, f.language) < 0 {
		return -1, MatchDefault // no translation in the tag's language: nothing below can fit
	}
	if i := indexKey(t.keys, f.keys[0]); i >= 0 {
		return i, MatchExact
	}
	base, next := 0, 1 // base: the tag less its region (the tag itself without one)
	if f.region {
		if i := indexKey(t.keys, f.keys[1]); i >= 0 {
			return i, MatchShorterTag
		}
		base, next = 1, 2
	}
	if i := t.regionalIndex(f.keys[base]); i >= 0 {
		return i, MatchRegion
	}
	for j := next; j < f.n; j++ {
		if i := indexKey(t.keys, f.keys[j]); i >= 0 {
			return i, MatchShorterTag
		}
	}
	return -1, MatchDefault
}

// --- the lang parameter: a tag, or an Accept-Language value ---------------------------------

// MaxLangLen bounds a request's lang; MaxLangPrefs languages of a list are considered, the first
// ones listed.
const (
	MaxLangLen   = 512
	MaxLangPrefs = 8
)

// LangRule describes a valid lang in the words its error message uses.
const LangRule = "a language tag like pt-BR, or a browser's Accept-Language value like \"pt-BR,pt;q=0.9,en;q=0.8\" (at most 512 characters)"

// isLangList reports whether lang is more than a bare tag (a list, a quality or spaces).
func isLangList(lang string) bool {
	for i := 0; i < len(lang); i++ {
		switch lang[i] {
		case ',', ';', ' ', '\t', '*':
			return true
		}
	}
	return false
}

// ValidLang reports whether lang may be a request's lang: absent (""), a bare code (CodeRule),
// or an HTTP Accept-Language value (RFC 9110 §12.5.4: language ranges of [A-Za-z0-9_-] or "*",
// each with an optional ";q=" weight from 0 to 1 with at most three decimals, separated by
// commas, with optional spaces), at most MaxLangLen bytes. A well-formed value is valid whatever
// its languages are: those no translation has simply match nothing.
func ValidLang(lang string) bool {
	if len(lang) > MaxLangLen {
		return false
	}
	if !isLangList(lang) {
		return lang == "" || validLangRange(lang)
	}
	for rest := lang; ; {
		elem, tail, more := strings.Cut(rest, ",")
		if _, ok := parseLangElem(elem); !ok {
			return false
		}
		if !more {
			return true
		}
		rest = tail
	}
}

// validLangRange: "*" or 1+ bytes of [A-Za-z0-9_-].
func validLangRange(r string) bool {
	if r == "*" {
		return true
	}
	if r == "" {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// langPref is one language of a list: its range's bounds in the value and its weight (0-1000).
type langPref struct {
	start, end uint16 // lang is at most MaxLangLen bytes
	q          uint16
}

// parseLangElem reads one element of a list ("", "pt-BR", " pt ; q=0.9"): its range's bounds
// within elem and its weight; ok is false for a malformed element. An empty element is allowed
// (RFC 9110 §5.6.1) and has an empty range.
func parseLangElem(elem string) (p langPref, ok bool) {
	s, e := 0, len(elem)
	for s < e && (elem[s] == ' ' || elem[s] == '\t') {
		s++
	}
	for e > s && (elem[e-1] == ' ' || elem[e-1] == '\t') {
		e--
	}
	p.q = 1000
	if s == e {
		return langPref{start: uint16(s), end: uint16(s)}, true
	}
	r, weight, hasWeight := strings.Cut(elem[s:e], ";")
	rs, re := s, s+len(r)
	for re > rs && (elem[re-1] == ' ' || elem[re-1] == '\t') {
		re--
	}
	if !validLangRange(elem[rs:re]) {
		return p, false
	}
	p.start, p.end = uint16(rs), uint16(re)
	if hasWeight {
		w := strings.TrimLeft(weight, " \t")
		if len(w) < 2 || w[0]|0x20 != 'q' || w[1] != '=' {
			return p, false
		}
		q, ok := parseQValue(w[2:])
		if !ok {
			return p, false
		}
		p.q = uint16(q)
	}
	return p, true
}

// parseQValue reads a weight (RFC 9110 §12.4.2: 0, 0.x to 0.xxx, 1, 1.0 to 1.000) in thousandths.
func parseQValue(v string) (int, bool) {
	if v == "" || len(v) > 5 || v[0] != '0' && v[0] != '1' {
		return 0, false
	}
	q := int(v[0]-'0') * 1000
	if len(v) == 1 {
		return q, true
	}
	if v[1] != '.' {
		return 0, false
	}
	scale := 100
	for i := 2; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		q += int(c-'0') * scale
		scale /= 10
	}
	return q, q <= 1000
}

// langPrefs are a list's languages to try, best first: by weight, the first listed first among
// equals; "*" and weight 0 left out. At most MaxLangPrefs, kept on the stack.
type langPrefs struct {
	list [MaxLangPrefs]langPref
	n    int
}

// parse reads a list that ValidLang accepted into p, in one pass over its bytes.
func (p *langPrefs) parse(lang string) {
	p.n = 0
	for i := 0; i < len(lang) && p.n < len(p.list); i++ { // i: at a ',' or the list's start
		for i < len(lang) && (lang[i] == ' ' || lang[i] == '\t' || lang[i] == ',') {
			i++
		}
		start := i
		for i < len(lang) && lang[i] != ',' && lang[i] != ';' && lang[i] != ' ' && lang[i] != '\t' {
			i++
		}
		end, q := i, 1000
		for i < len(lang) && lang[i] != ',' && lang[i] != ';' {
			i++
		}
		if i < len(lang) && lang[i] == ';' { // OWS "q=" qvalue: a digit, maybe "." and up to 3
			for i++; i < len(lang) && lang[i] != '='; i++ {
			}
			q, i = 0, i+1
			for scale := 1000; i < len(lang) && lang[i] != ',' && lang[i] != ' ' && lang[i] != '\t'; i++ {
				if c := lang[i]; c >= '0' && c <= '9' {
					q += int(c-'0') * scale
					scale /= 10
				}
			}
			for i < len(lang) && lang[i] != ',' {
				i++
			}
		}
		if end == start || q == 0 || end-start == 1 && lang[start] == '*' {
			continue
		}
		j := p.n // insertion by weight, after the equals already there
		for j > 0 && int(p.list[j-1].q) < q {
			p.list[j] = p.list[j-1]
			j--
		}
		p.list[j] = langPref{start: uint16(start), end: uint16(end), q: uint16(q)}
		p.n++
	}
}

// PrimaryLang is the language targeting compares a request's lang with: lang itself when it is
// a bare tag, else the list's best language (by weight, the first listed among equals); "" when
// the list names none.
func PrimaryLang(lang string) string {
	if !isLangList(lang) {
		return lang
	}
	if len(lang) > MaxLangLen {
		return ""
	}
	var prefs langPrefs
	prefs.parse(lang)
	if prefs.n == 0 {
		return ""
	}
	return lang[prefs.list[0].start:prefs.list[0].end]
}
