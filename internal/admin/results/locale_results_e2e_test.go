package results_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/testenv"
)

type localeEntry struct {
	Locale      *string `json:"locale"`
	Impressions int64   `json:"impressions"`
	Users       *int64  `json:"users"`
	Clicks      int64   `json:"clicks"`
	CTR         float64 `json:"ctr"`
}

// TestResultsPerLocaleThroughTheAPI shows a popup in Portuguese and in its own content through
// the public API, clicks it with and without the decision id, lets the worker write it all and
// reads by_locale back as JSON and CSV: each click under its impression's locale, the click that
// named no decision under locale null, and the entries adding up to the totals.
func TestResultsPerLocaleThroughTheAPI(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	_, api, db := apitest.StartWithWorker(t)
	ctx := context.Background()

	id := api.CreatePopup(t, apitest.PopupSpec("by-locale", map[string]any{"translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": "Abrir"}}}}}))
	decisions := map[string]string{}
	for _, u := range []struct{ uid, lang, want string }{{"l1", "pt-BR", "pt-BR"}, {"l2", "pt-BR", "pt-BR"}, {"l3", "fr", "default"}} {
		got, res := api.Get(t, "platform=ios&app_version=1&uid="+u.uid+"&lang="+u.lang)
		require.Equal(t, id, got, res.Raw)
		require.Equal(t, u.want, res.Body["locale"])
		decisions[u.uid] = res.Body["decision_id"].(string)
	}
	for _, body := range []string{
		`{"uid":"l1","action":"click","decision_id":"` + decisions["l1"] + `"}`,
		`{"uid":"l3","action":"click"}`, // no decision: no locale known
	} {
		res := api.Action(t, id, body)
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	}
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE popup_id = ?`, id).Scan(&n) == nil && n == 5
	}, 15*time.Second, 20*time.Millisecond, "the worker writes the 3 impressions and 2 clicks")

	path := "/admin/v1/popups/" + apitest.Itoa(id) + "/stats?tz=Asia/Kolkata"
	res := api.AdminDo(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var body struct {
		Totals   resultsDay    `json:"totals"`
		ByLocale []localeEntry `json:"by_locale"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &body))
	def, pt := "default", "pt-BR"
	one, two := int64(1), int64(2)
	assert.Equal(t, []localeEntry{
		{Locale: &def, Impressions: 1, Users: &one},
		{Locale: &pt, Impressions: 2, Users: &two, Clicks: 1, CTR: 0.5},
		{Clicks: 1},
	}, body.ByLocale)
	assert.Equal(t, [2]int64{3, 2}, [2]int64{body.Totals.Impressions, body.Totals.Clicks}, "the entries add up to the totals")

	res = api.AdminDo(t, http.MethodGet, strings.Replace(path, "/stats?", "/stats.csv?", 1), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	records, err := csv.NewReader(strings.NewReader(res.Raw)).ReadAll()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(records), 3)
	// header: date … ctr, close_rate, clicks button 0: Open, clicks unspecified, complete
	assert.Equal(t, [][]string{
		{"locale: default", "1", "1", "0", "", "0", "", "", "", ""},
		{"locale: pt-BR", "2", "2", "1", "", "0.5", "", "", "", ""},
		{"locale: unknown", "0", "", "1", "", "0", "", "", "", ""},
	}, records[len(records)-3:], "one row per locale after the totals")
}

// TestResultsCountTheLanguageServed: a popup translated to pt-BR alone serves pt-BR to a pt-PT
// request, a bare pt and a browser's Accept-Language list; explain says why; and the results
// count those impressions under pt-BR, the language served, not the one requested.
func TestResultsCountTheLanguageServed(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	_, api, db := apitest.StartWithWorker(t)
	ctx := context.Background()

	id := api.CreatePopup(t, apitest.PopupSpec("served-locale", map[string]any{"translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": "Abrir"}}}}}))
	for _, u := range []struct{ uid, lang, want string }{
		{"s1", "pt-PT", "pt-BR"},
		{"s2", "pt", "pt-BR"},
		{"s3", "pt-PT%2Cpt%3Bq%3D0.9%2Cen%3Bq%3D0.8", "pt-BR"},
		{"s4", "fr-FR", "default"},
	} {
		got, res := api.Get(t, "platform=ios&app_version=1&uid="+u.uid+"&lang="+u.lang)
		require.Equal(t, id, got, res.Raw)
		require.Equal(t, u.want, res.Body["locale"], u.lang)
	}
	for _, tt := range []struct{ lang, locale, match string }{
		{"pt-PT", "pt-BR", "region"},
		{"pt-BR%2Cpt%3Bq%3D0.9", "pt-BR", "exact"},
		{"fr", "default", "default"},
	} {
		res := api.AdminDo(t, http.MethodGet, "/admin/v1/preview?uid=x1&platform=ios&app_version=1&lang="+tt.lang, nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		assert.Equal(t, tt.locale, res.Body["locale"], tt.lang)
		assert.Equal(t, tt.match, res.Body["locale_match"], tt.lang)
	}
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE popup_id = ?`, id).Scan(&n) == nil && n == 4
	}, 15*time.Second, 20*time.Millisecond, "the worker writes the 4 impressions")

	res := api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id)+"/stats", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var body struct {
		ByLocale []localeEntry `json:"by_locale"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &body))
	def, pt := "default", "pt-BR"
	one, three := int64(1), int64(3)
	assert.Equal(t, []localeEntry{
		{Locale: &def, Impressions: 1, Users: &one},
		{Locale: &pt, Impressions: 3, Users: &three},
	}, body.ByLocale)
}
