package results_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/testenv"
)

type resultsButton struct {
	Button *int   `json:"button"`
	Text   string `json:"text"`
	Clicks int64  `json:"clicks"`
}

type resultsDay struct {
	Date           string          `json:"date"`
	Impressions    int64           `json:"impressions"`
	Users          *int64          `json:"users"`
	Clicks         int64           `json:"clicks"`
	Closes         int64           `json:"closes"`
	CTR            float64         `json:"ctr"`
	CloseRate      float64         `json:"close_rate"`
	ClicksByButton []resultsButton `json:"clicks_by_button"`
	Complete       bool            `json:"complete"`
}

type resultsBody struct {
	PopupID         int64        `json:"popup_id"`
	From            string       `json:"from"`
	To              string       `json:"to"`
	TimeZone        string       `json:"time_zone"`
	UniquesComplete bool         `json:"uniques_complete"`
	Days            []resultsDay `json:"days"`
	Totals          resultsDay   `json:"totals"`
}

// TestResultsThroughTheAPI clicks buttons through the public API, lets the worker write them
// and reads the results back in the reporting time zone, as JSON and as CSV.
func TestResultsThroughTheAPI(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	_, api, db := apitest.StartWithWorker(t)
	ctx := context.Background()

	id := api.CreatePopup(t, apitest.PopupSpec("results", map[string]any{"buttons": []map[string]any{
		{"text": "Yes", "link_url": "app://yes"}, {"text": "=No", "link_url": "app://no"}}}))
	uids := []string{"r1", "r2", "r3", "r4"}
	for _, uid := range uids {
		got, _ := api.Get(t, "uid="+uid+"&platform=ios&app_version=1")
		require.Equal(t, id, got)
	}
	for _, a := range []struct {
		body string
		want int
		code string
	}{
		{`{"uid":"r1","action":"click","button":0}`, http.StatusAccepted, ""},
		{`{"uid":"r2","action":"click","button":1}`, http.StatusAccepted, ""},
		{`{"uid":"r3","action":"click"}`, http.StatusAccepted, ""},
		{`{"uid":"r4","action":"close"}`, http.StatusAccepted, ""},
		{`{"uid":"r4","action":"click","button":2}`, http.StatusBadRequest, "invalid_button"},
		{`{"uid":"r4","action":"click","button":-1}`, http.StatusBadRequest, "invalid_button"},
		{`{"uid":"r4","action":"click","button":"0"}`, http.StatusBadRequest, "invalid_button"},
		{`{"uid":"r4","action":"close","button":0}`, http.StatusBadRequest, "invalid_button"},
	} {
		res := api.Action(t, id, a.body)
		require.Equal(t, a.want, res.Status, "%s: %s", a.body, res.Raw)
		if a.code != "" {
			assert.Equal(t, a.code, res.Body["error"].(map[string]any)["code"], res.Raw)
			assert.Contains(t, res.Raw, "button", "the answer names the button")
		}
	}
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE popup_id = ?`, id).Scan(&n) == nil && n == 8
	}, 15*time.Second, 20*time.Millisecond, "the worker writes the 4 impressions and 4 actions")

	// The team reports in Los Angeles days.
	res := api.AdminDo(t, http.MethodPut, "/admin/v1/settings", map[string]any{"reporting_time_zone": "America/Los_Angeles"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.AdminDo(t, http.MethodGet, "/admin/v1/settings", nil)
	assert.Equal(t, "America/Los_Angeles", res.Body["reporting_time_zone"])

	path := "/admin/v1/popups/" + apitest.Itoa(id) + "/stats"
	res = api.AdminDo(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var body resultsBody
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &body))
	la, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	assert.Equal(t, "America/Los_Angeles", body.TimeZone)
	assert.Equal(t, time.Now().In(la).Format(time.DateOnly), body.To, "today is Los Angeles' today")
	assert.True(t, body.UniquesComplete)
	tot := body.Totals
	assert.Equal(t, [3]int64{4, 3, 1}, [3]int64{tot.Impressions, tot.Clicks, tot.Closes})
	require.NotNil(t, tot.Users)
	assert.Equal(t, int64(4), *tot.Users)
	assert.InDelta(t, 0.25, tot.CloseRate, 1e-9)
	zero, one := 0, 1
	assert.Equal(t, []resultsButton{{Button: &zero, Text: "Yes", Clicks: 1}, {Button: &one, Text: "=No", Clicks: 1}, {Text: "unspecified", Clicks: 1}}, tot.ClicksByButton)

	// The CSV holds exactly the same numbers.
	req, err := http.NewRequest(http.MethodGet, "http://"+api.Admin+path+".csv", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apitest.Token)
	hres, err := api.Client.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(hres.Body)
	hres.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, hres.StatusCode, string(raw))
	assert.Equal(t, "text/csv; charset=utf-8", hres.Header.Get("Content-Type"))
	assert.Equal(t, `attachment; filename="popup-`+apitest.Itoa(id)+`-`+body.From+`-`+body.To+`.csv"`, hres.Header.Get("Content-Disposition"))
	records, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"date", "impressions", "users", "clicks", "closes", "ctr", "close_rate",
		"clicks button 0: Yes", "clicks button 1: =No", "clicks unspecified", "complete"}, records[0])
	require.Len(t, records, 1+len(body.Days)+1+2, "header, every day, totals, then per locale: default, and the clicks that named no decision")
	assert.Equal(t, []string{"locale: default", "locale: unknown"}, []string{records[len(records)-2][0], records[len(records)-1][0]})
	for i, d := range append(body.Days, func() resultsDay { tot.Date = "total"; return tot }()) {
		users := ""
		if d.Users != nil {
			users = strconv.FormatInt(*d.Users, 10)
		}
		want := []string{d.Date, apitest.Itoa(d.Impressions), users, apitest.Itoa(d.Clicks), apitest.Itoa(d.Closes),
			strconv.FormatFloat(d.CTR, 'g', -1, 64), strconv.FormatFloat(d.CloseRate, 'g', -1, 64)}
		for _, b := range d.ClicksByButton {
			want = append(want, apitest.Itoa(b.Clicks))
		}
		want = append(want, strconv.FormatBool(d.Complete))
		assert.Equal(t, want, records[1+i], "row %d", i+1)
	}

	// Bad parameters get the JSON 400 on both routes.
	for _, p := range []string{"?tz=Nowhere/City", "?from=2026-13-01", "?from=2026-12-02&to=2026-12-01", "?from=2025-01-01&to=2026-12-01"} {
		for _, route := range []string{path, path + ".csv"} {
			res := api.AdminDo(t, http.MethodGet, route+p, nil)
			assert.Equal(t, http.StatusBadRequest, res.Status, "%s%s: %s", route, p, res.Raw)
		}
	}
}
