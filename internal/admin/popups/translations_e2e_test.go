package popups_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestTranslationsThroughHTTP: a popup's translations through the admin API, the public answer's
// choice of language (exact, then without the region, then the default) and the preview's.
func TestTranslationsThroughHTTP(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Config(t), nil)
	spec := apitest.PopupSpec("i18n", map[string]any{"translations": map[string]any{
		"pt-br": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": "Abrir"}}},
		"de":    map[string]any{"title": "Hallo", "content": "hallo", "buttons": []map[string]any{{"text": "Öffnen", "link_url": "app://de"}}},
	}})

	bad := apitest.PopupSpec("i18n-bad", map[string]any{"translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": " "}}},
		"fr":    map[string]any{"title": "Salut", "content": "salut", "buttons": []map[string]any{}},
	}})
	res := api.AdminDo(t, http.MethodPost, "/admin/v1/popups", bad)
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	assert.Contains(t, res.Raw, `"field":"translations.fr.buttons"`)
	assert.Contains(t, res.Raw, `"field":"translations.pt-BR.buttons[0].text"`)

	id := api.CreatePopup(t, spec)
	res = api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	tr := res.Body["translations"].(map[string]any)
	assert.Contains(t, tr, "pt-BR", "stored in canonical case")
	assert.Contains(t, tr, "de")

	tests := []struct {
		uid, lang  string
		wantLocale string
		wantTitle  string
		wantLink   string // the first button's
	}{
		{uid: "u1", lang: "pt-BR", wantLocale: "pt-BR", wantTitle: "Olá", wantLink: "app://open"},
		{uid: "u2", lang: "de_AT", wantLocale: "de", wantTitle: "Hallo", wantLink: "app://de"},
		{uid: "u3", lang: "fr", wantLocale: "default", wantTitle: "i18n title", wantLink: "app://open"},
	}
	for _, tt := range tests {
		got, res := api.Get(t, "platform=ios&app_version=1&uid="+tt.uid+"&lang="+tt.lang)
		require.Equal(t, id, got, res.Raw)
		assert.Equal(t, tt.wantLocale, res.Body["locale"], tt.lang)
		p := res.Body["popup"].(map[string]any)
		assert.Equal(t, tt.wantTitle, p["title"], tt.lang)
		assert.Equal(t, tt.wantLink, p["buttons"].([]any)[0].(map[string]any)["link_url"], tt.lang)
	}

	res = api.AdminDo(t, http.MethodGet, "/admin/v1/preview?platform=ios&app_version=1&uid=u9&lang=pt-PT", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "pt-BR", res.Body["locale"], "pt-PT: no pt, Portuguese in another region")
	assert.Equal(t, "region", res.Body["locale_match"])
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": "u9", "platform": "ios", "app_version": "1",
		"lang": "pt-BR", "popup": spec})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "pt-BR", res.Body["locale"])
}

// TestTranslationTableRoundTrip: the table downloaded and uploaded unchanged writes nothing; a
// translator's column adds a language; a bad table is a 400 naming its cells and changes nothing.
func TestTranslationTableRoundTrip(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Config(t), nil)
	id := api.CreatePopup(t, apitest.PopupSpec("table", map[string]any{"translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá, \"amigo\"", "content": "linha 1\nlinha 2", "link_url": "app://pt",
			"buttons": []map[string]any{{"text": "Abrir"}}},
	}}))
	path := "/admin/v1/popups/" + apitest.Itoa(id) + "/translations.csv"

	status, tag, table := api.CSVDo(t, http.MethodGet, path, "", nil)
	require.Equal(t, http.StatusOK, status, table)
	assert.Equal(t, "\ufeffkey,default,pt-BR\ntitle,table title,\"Olá, \"\"amigo\"\"\"\ncontent,hello,\"linha 1\nlinha 2\"\nbuttons[0].text,Open,Abrir\n", table)

	status, after, body := api.CSVDo(t, http.MethodPut, path, table, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, tag, after, "the table unchanged writes nothing")

	bad := "key,default,pt-BR,de\ntitle,,Olá,Hallo\ncontent,,oi,\nbuttons[0].text,,Abrir,\nsubtitle,,x,y\n"
	status, _, body = api.CSVDo(t, http.MethodPut, path, bad, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusBadRequest, status, body)
	assert.Contains(t, body, `"field":"row 5, column key"`)
	bad = "key,default,pt-BR,de\ntitle,,Olá,Hallo\ncontent,,oi,\nbuttons[0].text,,Abrir,\n"
	status, _, body = api.CSVDo(t, http.MethodPut, path, bad, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusBadRequest, status, body)
	assert.Contains(t, body, `"field":"row 3, column de"`, "de has a title but no content")
	assert.Contains(t, body, `"field":"row 4, column de"`, "nor a button's text")
	_, still, _ := api.CSVDo(t, http.MethodGet, path, "", nil)
	assert.Equal(t, tag, still, "nothing applied")

	good := "key,default,pt-BR,de\ntitle,,Olá,Hallo\ncontent,,oi,hallo\nbuttons[0].text,,Abrir,Öffnen\n"
	status, after, body = api.CSVDo(t, http.MethodPut, path, good, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusOK, status, body)
	assert.NotEqual(t, tag, after)
	res := api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	tr := res.Body["translations"].(map[string]any)
	assert.Equal(t, "Hallo", tr["de"].(map[string]any)["title"])
	assert.Equal(t, "app://pt", tr["pt-BR"].(map[string]any)["link_url"], "a translation keeps its links")
	assert.Equal(t, "oi", tr["pt-BR"].(map[string]any)["content"])

	status, _, body = api.CSVDo(t, http.MethodPut, path, good, map[string]string{"If-Match": tag})
	assert.Equal(t, http.StatusPreconditionFailed, status, body)
}

// TestTranslationTableForSpreadsheets: the table downloads with a UTF-8 BOM (Excel then reads
// "você" right), goes back up with or without it, a spreadsheet is refused saying "save it as
// CSV", and a bad cell's message says "not applied" once.
func TestTranslationTableForSpreadsheets(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Config(t), nil)
	id := api.CreatePopup(t, apitest.PopupSpec("sheet", map[string]any{"translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá você", "content": "oi", "buttons": []map[string]any{{"text": "Abrir"}}}}}))
	path := "/admin/v1/popups/" + apitest.Itoa(id) + "/translations.csv"
	status, _, table := api.Send(t, apitest.Token, "GET", path, "", nil)
	require.Equal(t, http.StatusOK, status, table)
	require.True(t, strings.HasPrefix(table, "\ufeffkey,default,pt-BR\n"), "a BOM, then the header: %q", table[:min(len(table), 40)])
	assert.Contains(t, table, "Olá você")

	for _, body := range []string{table, strings.TrimPrefix(table, "\ufeff")} {
		status, _, raw := api.Send(t, apitest.Token, "PUT", path, "text/csv", strings.NewReader(body))
		require.Equal(t, http.StatusOK, status, raw)
	}
	status, body, raw := api.Send(t, apitest.Token, "PUT", path, "text/csv", strings.NewReader("PK\x03\x04\x14\x00\x06\x00xl/workbook.xml"))
	require.Equal(t, http.StatusUnsupportedMediaType, status, raw)
	assert.Contains(t, body["error"].(map[string]any)["message"], "save it as CSV")

	status, body, raw = api.Send(t, apitest.Token, "PUT", path, "text/csv", strings.NewReader("key,default,xx-notatag-x\ntitle,T,t\n"))
	require.Equal(t, http.StatusBadRequest, status, raw)
	msg := body["error"].(map[string]any)["message"].(string)
	assert.Equal(t, 1, strings.Count(strings.ToLower(msg), "not applied"), msg)
}
