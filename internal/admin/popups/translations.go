package popups

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// The translation table as CSV (docs/CONTRACT.md §13): a header "key,default,<locale>…", then one
// row per string of the popup (popup.TextRows), UTF-8. Translators fill in a column per language;
// PUT takes the same table back, whole.

// getTranslationsCSV answers GET /admin/v1/popups/{id}/translations.csv, with the popup's ETag
// for the PUT that brings the table back.
func (a *API) getTranslationsCSV(c *gin.Context) {
	p, ok := a.popupOf(c)
	if !ok {
		return
	}
	locales := p.TranslationLocales()
	var buf bytes.Buffer
	buf.WriteString(utf8BOM) // so that Excel reads the table as UTF-8 ("você", not "vocÃª")
	w := csv.NewWriter(&buf)
	_ = w.Write(append([]string{"key", "default"}, locales...)) // a bytes.Buffer does not fail
	for _, r := range p.TextRows() {
		rec := []string{r.Key, r.Default}
		for _, l := range locales {
			rec = append(rec, r.Texts[l])
		}
		_ = w.Write(rec)
	}
	w.Flush()
	c.Header("ETag", httpapi.ETag(p.Revision))
	c.Header("Content-Disposition", `attachment; filename="popup-`+strconv.FormatInt(p.ID, 10)+`-translations.csv"`)
	c.Data(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
}

// putTranslationsCSV answers PUT /admin/v1/popups/{id}/translations.csv: the table replaces the
// popup's translations' texts (their links are kept), validated whole: any problem is a 400
// naming each row and column at fault and nothing is applied. If-Match is honoured as for PUT
// /popups/{id}; a table that changes nothing writes nothing.
func (a *API) putTranslationsCSV(c *gin.Context) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	accept, aerr := httpapi.ParseFlag("accept_reassignment", c.Query("accept_reassignment"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	raw, aerr := httpapi.ReadBody(c, maxAdminBody, errPopupTooLarge)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	if aerr := httpapi.SniffText(raw[:min(len(raw), httpapi.SniffLen)]); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	locales, rows, err := readTranslationTable(raw)
	if err != nil {
		a.Fail(c, err)
		return
	}
	opts := popup.UpdateOptions{IfRevision: httpapi.IfMatch(c), AcceptReassignment: accept}
	a.save(c, http.StatusOK, popup.ChangeUpdate, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		stored, err := a.Repo.Get(ctx, id)
		if err != nil {
			return popup.Popup{}, false, err
		}
		next, err := applyTranslationTable(stored, locales, rows, a.Links)
		if err != nil {
			return popup.Popup{}, false, err
		}
		return a.Repo.Update(ctx, by, id, next, opts)
	})
}

// tableCell names a cell of the uploaded table: its row (the header is row 1) and column.
func tableCell(row int, column string) string {
	return "row " + strconv.Itoa(row) + ", column " + column
}

// readTranslationTable parses an uploaded table: the header's locales (canonical tags) and the
// rows, each naming its row number. Every structural problem is named at once.
func readTranslationTable(raw []byte) ([]string, []popup.TextRow, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(raw, []byte(utf8BOM)))) // ours, or a spreadsheet's
	header, err := r.Read()
	if err != nil {
		return nil, nil, httpapi.BadRequest("invalid_csv", "the table must start with a header row: key,default,<language>…")
	}
	var fes []popup.FieldError
	if len(header) < 2 || header[0] != "key" || header[1] != "default" {
		fes = append(fes, popup.FieldError{Field: tableCell(1, "A"), Message: `the header must begin with "key","default"`})
	}
	var locales []string
	for i := 2; i < len(header); i++ {
		tag, ok := popup.CanonicalLocale(header[i])
		switch {
		case !ok:
			fes = append(fes, popup.FieldError{Field: tableCell(1, header[i]), Message: "must be " + popup.LocaleRule})
		case slices.Contains(locales, tag):
			fes = append(fes, popup.FieldError{Field: tableCell(1, header[i]), Message: "names a language twice"})
		}
		locales = append(locales, tag)
	}
	if len(fes) > 0 {
		return nil, nil, tableError(fes)
	}
	var rows []popup.TextRow
	for n := 2; ; n++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, tableError([]popup.FieldError{{Field: tableCell(pe.Line, "key"), Message: "is not valid CSV: " + pe.Err.Error()}})
			}
			return nil, nil, httpapi.BadRequest("invalid_csv", "the table is not valid CSV")
		}
		row := popup.TextRow{Key: rec[0], Texts: make(map[string]string, len(locales))}
		for i, l := range locales {
			row.Texts[l] = rec[i+2]
		}
		rows = append(rows, row)
	}
	return locales, rows, nil
}

// applyTranslationTable is stored with the table's translations, validated: a problem is a 400
// naming the table's cells (row, column) wherever it maps to one, the popup's field otherwise.
func applyTranslationTable(stored popup.Popup, locales []string, rows []popup.TextRow, links popup.LinkSchemes) (popup.Popup, error) {
	rowOf := make(map[string]int, len(rows))
	for i, r := range rows {
		if _, dup := rowOf[r.Key]; !dup {
			rowOf[r.Key] = i + 2
		}
	}
	next, cellErrs := stored.WithTextRows(locales, rows)
	var fes []popup.FieldError
	for _, e := range cellErrs {
		row, ok := rowOf[e.Key]
		where := e.Key
		if ok {
			where = tableCell(row, e.Column)
		}
		fes = append(fes, popup.FieldError{Field: where, Message: "key " + strconv.Quote(e.Key) + " " + e.Message})
	}
	if len(fes) > 0 {
		return popup.Popup{}, tableError(fes)
	}
	if err := next.ValidateWith(links); err != nil {
		var ve *popup.ValidationError
		if !errors.As(err, &ve) {
			return popup.Popup{}, err
		}
		for _, f := range ve.Fields {
			key, column, ok := popup.TableField(f.Field)
			row, found := rowOf[key]
			if ok && found {
				fes = append(fes, popup.FieldError{Field: tableCell(row, column), Message: f.Field + " " + f.Message})
				continue
			}
			fes = append(fes, f)
		}
		return popup.Popup{}, tableError(fes)
	}
	return next, nil
}

// utf8BOM starts the table as downloaded; an upload may start with it or not.
const utf8BOM = "\ufeff"

// tableError is the 400 of a refused table, naming each problem: the message says it once (a
// client shows it as it is, without a prefix of its own) and fields lists them all.
func tableError(fes []popup.FieldError) error {
	msg := "the translation table was not applied: " + fes[0].Field + ": " + fes[0].Message
	if len(fes) > 1 {
		msg += " (and " + strconv.Itoa(len(fes)-1) + " more)"
	}
	return httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "validation_failed", Message: msg, Fields: fes})
}
