package popup

import (
	"slices"
	"strconv"
	"strings"
)

// The translation table is a popup's texts for translators (docs/CONTRACT.md §13): one row per
// string of the popup's own content and of each experiment variant (title, content, each
// button's text), one column per language. Links are not in it: a table written back keeps each
// translation's links.

// TextRow is one string of the table: its key (the field path within the popup, as errors name
// fields: "title", "buttons[1].text", "experiment.variants[0].content"), the default content's
// text and, by locale, its translations ("" for none).
type TextRow struct {
	Key     string
	Default string
	Texts   map[string]string
}

// creativeRef is one creative of a popup and the prefix of its fields' paths.
type creativeRef struct {
	prefix string
	c      *Creative
}

// creatives are p's own content and its variants', in the order of the popup's JSON.
func (p *Popup) creatives() []creativeRef {
	out := []creativeRef{{"", &p.Creative}}
	if p.Experiment != nil {
		for i := range p.Experiment.Variants {
			out = append(out, creativeRef{"experiment.variants[" + strconv.Itoa(i) + "].", &p.Experiment.Variants[i].Creative})
		}
	}
	return out
}

// textKeys are the keys of a creative's strings, without its prefix.
func (c *Creative) textKeys() []string {
	keys := []string{"title", "content"}
	for i := range c.Buttons {
		keys = append(keys, "buttons["+strconv.Itoa(i)+"].text")
	}
	return keys
}

// text is the string key (a textKeys key) of the creative's own content, or of translation t.
func textOf(key string, title, content string, buttons []Button) string {
	switch key {
	case "title":
		return title
	case "content":
		return content
	}
	i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(key, "buttons["), "].text"))
	if i < len(buttons) {
		return buttons[i].Text
	}
	return ""
}

// TranslationLocales are the locales any creative of p is translated into, sorted.
func (p *Popup) TranslationLocales() []string {
	var out []string
	for _, cr := range p.creatives() {
		for _, t := range cr.c.Translations {
			out = append(out, t.Locale)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TextRows are p's translation table, in the order of the popup's fields.
func (p *Popup) TextRows() []TextRow {
	var rows []TextRow
	for _, cr := range p.creatives() {
		c := cr.c
		for _, key := range c.textKeys() {
			row := TextRow{Key: cr.prefix + key, Default: textOf(key, c.Title, c.Content, c.Buttons), Texts: map[string]string{}}
			for _, t := range c.Translations {
				row.Texts[t.Locale] = textOf(key, t.Title, t.Content, t.Buttons)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// TextCellError is a problem of a translation table written back: the row's key and the column
// ("key", or a locale) at fault.
type TextCellError struct {
	Key, Column, Message string
}

// WithTextRows is p with its translations' texts replaced by rows (every key of TextRows exactly
// once; Default is ignored) in the given locales (canonical tags), the table being the whole of
// p's translations: a creative whose cells of a locale are all empty has no translation into it,
// and a locale not given is dropped. Each translation keeps the links it had. The result is not
// validated (ValidateWith; Translation errors name translations.<locale>.<key>, which
// TableField maps back to the table).
func (p Popup) WithTextRows(locales []string, rows []TextRow) (Popup, []TextCellError) {
	byKey := make(map[string]*TextRow, len(rows))
	var errs []TextCellError
	for i := range rows {
		r := &rows[i]
		if byKey[r.Key] != nil {
			errs = append(errs, TextCellError{Key: r.Key, Column: "key", Message: "appears twice"})
		}
		byKey[r.Key] = r
	}
	locales = slices.Sorted(slices.Values(locales)) // translations are kept sorted by locale
	out := p
	if p.Experiment != nil {
		e := *p.Experiment
		e.Variants = slices.Clone(e.Variants)
		out.Experiment = &e
	}
	known := map[string]bool{}
	for _, cr := range out.creatives() {
		c := cr.c
		keys := c.textKeys()
		var next []Translation
		for _, locale := range locales {
			t := Translation{Locale: locale, Buttons: make([]Button, len(c.Buttons))}
			if old := c.Translation(locale); old != nil {
				t.ImageURL, t.LinkURL = old.ImageURL, old.LinkURL
				for i := range t.Buttons {
					if i < len(old.Buttons) {
						t.Buttons[i].LinkURL = old.Buttons[i].LinkURL
					}
				}
			}
			some := false
			for _, key := range keys {
				known[cr.prefix+key] = true
				r := byKey[cr.prefix+key]
				if r == nil {
					continue
				}
				s := r.Texts[locale]
				some = some || s != ""
				switch key {
				case "title":
					t.Title = s
				case "content":
					t.Content = s
				default:
					i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(key, "buttons["), "].text"))
					t.Buttons[i].Text = s
				}
			}
			if some {
				next = append(next, t)
			}
		}
		c.Translations = next
	}
	for _, r := range p.TextRows() {
		if byKey[r.Key] == nil {
			errs = append(errs, TextCellError{Key: r.Key, Column: "key", Message: "is missing: the table has one row for every string of the popup"})
		}
	}
	for _, r := range rows {
		if !known[r.Key] {
			errs = append(errs, TextCellError{Key: r.Key, Column: "key", Message: "is not a string of the popup"})
		}
	}
	return out, errs
}

// TableField maps a validation error's field to the table's row key and column: a translation's
// text (translations.pt-BR.title → "title", "pt-BR"; a variant's with its prefix). ok is false
// for any other field (a translation's link, its number of buttons, the number of languages).
func TableField(field string) (key, column string, ok bool) {
	prefix, rest := "", field
	if strings.HasPrefix(field, "experiment.variants[") {
		i := strings.Index(field, "].")
		if i < 0 {
			return "", "", false
		}
		prefix, rest = field[:i+2], field[i+2:]
	}
	rest, found := strings.CutPrefix(rest, "translations.")
	if !found {
		return "", "", false
	}
	dot := strings.IndexByte(rest, '.')
	if dot < 0 {
		return "", "", false
	}
	column, sub := rest[:dot], rest[dot+1:]
	if sub != "title" && sub != "content" && !(strings.HasPrefix(sub, "buttons[") && strings.HasSuffix(sub, "].text")) {
		return "", "", false
	}
	return prefix + sub, column, true
}
