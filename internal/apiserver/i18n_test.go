package apiserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTranslationsThroughHTTP: a popup's translations through the admin API, the public answer's
// choice of language (exact, then without the region, then the default) and the preview's.
func TestTranslationsThroughHTTP(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	spec := popupSpec("i18n", map[string]any{"translations": map[string]any{
		"pt-br": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": "Abrir"}}},
		"de":    map[string]any{"title": "Hallo", "content": "hallo", "buttons": []map[string]any{{"text": "Öffnen", "link_url": "app://de"}}},
	}})

	bad := popupSpec("i18n-bad", map[string]any{"translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": " "}}},
		"fr":    map[string]any{"title": "Salut", "content": "salut", "buttons": []map[string]any{}},
	}})
	res := api.adminDo(t, http.MethodPost, "/admin/v1/popups", bad)
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	assert.Contains(t, res.Raw, `"field":"translations.fr.buttons"`)
	assert.Contains(t, res.Raw, `"field":"translations.pt-BR.buttons[0].text"`)

	id := api.createPopup(t, spec)
	res = api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
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
		got, res := api.get(t, "platform=ios&app_version=1&uid="+tt.uid+"&lang="+tt.lang)
		require.Equal(t, id, got, res.Raw)
		assert.Equal(t, tt.wantLocale, res.Body["locale"], tt.lang)
		p := res.Body["popup"].(map[string]any)
		assert.Equal(t, tt.wantTitle, p["title"], tt.lang)
		assert.Equal(t, tt.wantLink, p["buttons"].([]any)[0].(map[string]any)["link_url"], tt.lang)
	}

	res = api.adminDo(t, http.MethodGet, "/admin/v1/preview?platform=ios&app_version=1&uid=u9&lang=pt-PT", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "pt-BR", res.Body["locale"], "pt-PT: no pt, Portuguese in another region")
	assert.Equal(t, "region", res.Body["locale_match"])
	res = api.adminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": "u9", "platform": "ios", "app_version": "1",
		"lang": "pt-BR", "popup": spec})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "pt-BR", res.Body["locale"])
}

// TestPacingSettingReachesEveryInstance: the min gap set through one instance's admin API holds
// on another instance within 2 s, and GET /admin/v1/settings shows it (the daily cap's default
// being POPUP_USER_DAILY_CAP).
func TestPacingSettingReachesEveryInstance(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.UserDailyCap = 7
	a, b := start(t, cfg, nil), start(t, cfg, nil)
	first := a.createPopup(t, popupSpec("first", map[string]any{"priority": 10}))
	second := a.createPopup(t, popupSpec("second", map[string]any{"priority": 5}))

	res := a.adminDo(t, http.MethodGet, "/admin/v1/settings", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.EqualValues(t, 7, res.Body["daily_cap"], "POPUP_USER_DAILY_CAP is the initial value")
	assert.EqualValues(t, 0, res.Body["min_gap_seconds"])

	// twice shows what user uid gets on two homepage opens of instance b.
	twice := func(uid string) (int64, int64) {
		q := "platform=ios&app_version=1&uid=" + uid
		one, _ := b.get(t, q)
		two, _ := b.get(t, q)
		return one, two
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		one, two := twice("before-" + itoa(int64(n)))
		if one == first && two == second {
			break // b serves both popups, no gap between them
		}
		require.False(t, time.Now().After(deadline), "b never served both popups")
		time.Sleep(50 * time.Millisecond)
	}

	res = a.adminDo(t, http.MethodPut, "/admin/v1/settings", map[string]any{"reporting_time_zone": "UTC", "min_gap_seconds": 600})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.EqualValues(t, 600, res.Body["min_gap_seconds"])
	assert.EqualValues(t, 7, res.Body["daily_cap"], "left out: unchanged")
	changed := time.Now()
	for n := 0; ; n++ {
		one, two := twice("after-" + itoa(int64(n)))
		if one == first && two == 0 {
			break
		}
		require.Less(t, time.Since(changed), 2*time.Second, "the min gap did not reach the other instance within 2 s")
		time.Sleep(20 * time.Millisecond)
	}
	res = b.adminDo(t, http.MethodGet, "/admin/v1/preview?platform=ios&app_version=1&uid=after-0", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Contains(t, res.Raw, `"reason":"min_gap"`)
}

// csvDo sends a table (or nothing) to the admin API and returns the status, the ETag and the body.
func csvDo(t *testing.T, in *instance, method, path, body string, header map[string]string) (int, string, string) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token}
	for k, v := range header {
		h[k] = v
	}
	var b any
	if body != "" {
		b = body
	}
	res := in.do(t, method, "http://"+in.admin+path, b, h)
	return res.Status, res.Header.Get("ETag"), res.Raw
}

// TestTranslationTableRoundTrip: the table downloaded and uploaded unchanged writes nothing; a
// translator's column adds a language; a bad table is a 400 naming its cells and changes nothing.
func TestTranslationTableRoundTrip(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("table", map[string]any{"translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá, \"amigo\"", "content": "linha 1\nlinha 2", "link_url": "app://pt",
			"buttons": []map[string]any{{"text": "Abrir"}}},
	}}))
	path := "/admin/v1/popups/" + itoa(id) + "/translations.csv"

	status, tag, table := csvDo(t, api, http.MethodGet, path, "", nil)
	require.Equal(t, http.StatusOK, status, table)
	assert.Equal(t, "\ufeffkey,default,pt-BR\ntitle,table title,\"Olá, \"\"amigo\"\"\"\ncontent,hello,\"linha 1\nlinha 2\"\nbuttons[0].text,Open,Abrir\n", table)

	status, after, body := csvDo(t, api, http.MethodPut, path, table, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, tag, after, "the table unchanged writes nothing")

	bad := "key,default,pt-BR,de\ntitle,,Olá,Hallo\ncontent,,oi,\nbuttons[0].text,,Abrir,\nsubtitle,,x,y\n"
	status, _, body = csvDo(t, api, http.MethodPut, path, bad, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusBadRequest, status, body)
	assert.Contains(t, body, `"field":"row 5, column key"`)
	bad = "key,default,pt-BR,de\ntitle,,Olá,Hallo\ncontent,,oi,\nbuttons[0].text,,Abrir,\n"
	status, _, body = csvDo(t, api, http.MethodPut, path, bad, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusBadRequest, status, body)
	assert.Contains(t, body, `"field":"row 3, column de"`, "de has a title but no content")
	assert.Contains(t, body, `"field":"row 4, column de"`, "nor a button's text")
	_, still, _ := csvDo(t, api, http.MethodGet, path, "", nil)
	assert.Equal(t, tag, still, "nothing applied")

	good := "key,default,pt-BR,de\ntitle,,Olá,Hallo\ncontent,,oi,hallo\nbuttons[0].text,,Abrir,Öffnen\n"
	status, after, body = csvDo(t, api, http.MethodPut, path, good, map[string]string{"If-Match": tag})
	require.Equal(t, http.StatusOK, status, body)
	assert.NotEqual(t, tag, after)
	res := api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
	tr := res.Body["translations"].(map[string]any)
	assert.Equal(t, "Hallo", tr["de"].(map[string]any)["title"])
	assert.Equal(t, "app://pt", tr["pt-BR"].(map[string]any)["link_url"], "a translation keeps its links")
	assert.Equal(t, "oi", tr["pt-BR"].(map[string]any)["content"])

	status, _, body = csvDo(t, api, http.MethodPut, path, good, map[string]string{"If-Match": tag})
	assert.Equal(t, http.StatusPreconditionFailed, status, body)
}
