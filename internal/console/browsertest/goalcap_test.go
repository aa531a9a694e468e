package browsertest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
)

// TestGoalValueCapInExperimentResults (issue 49, 4): a goal's value_cap caps each user's value in
// the results' capped sum, the raw sum unchanged beside it. A buyer of 10^12 (sent as two orders)
// and one of 50 on a goal capped at 100: raw 10^12+50, capped 100+50, across the arms, through
// the real service and worker, the answer checked against api/openapi.yaml.
func TestGoalValueCapInExperimentResults(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	c := apitest.AdminClient{Spec: apitest.NewSpecChecker(t, api.Public, api.Admin), Base: "http://" + api.Admin}

	g := c.Do(t, "POST", "/admin/v1/goals", `{"key":"purchase","name":"Purchase","value":"sum","value_cap":100}`, nil, http.StatusCreated)
	assert.Equal(t, 100.0, g.Body["value_cap"])
	c.Do(t, "POST", "/admin/v1/goals", `{"key":"signup","name":"Sign-up"}`, nil, http.StatusCreated)
	id := api.CreatePopup(t, apitest.PopupSpec("cap-exp", map[string]any{"status": "active", "experiment": map[string]any{
		"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}}))

	res := api.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	for _, uid := range []string{"whale", "minnow"} {
		apitest.Eventually(t, 10*time.Second, "the experiment is served to "+uid, func() bool {
			got, res := api.Get(t, "uid="+uid+"&platform=ios&app_version=1.0.0")
			return got == id && res.Body["variant"] != nil
		})

	}
	key := api.IngestKey(t)
	for _, cv := range []map[string]any{
		{"uid": "whale", "goal": "purchase", "event_id": "o1", "value": 6e11},
		{"uid": "whale", "goal": "purchase", "event_id": "o2", "value": 4e11},
		{"uid": "minnow", "goal": "purchase", "event_id": "o1", "value": 50},
		{"uid": "minnow", "goal": "signup", "event_id": "s1"},
	} {
		res := api.ConversionAs(t, key, cv)
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	}

	var raw, capped, signupCapped []any
	apitest.Eventually(t, 15*time.Second, "the results count both buyers' three orders", func() bool {
		r := c.Do(t, "GET", "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/results", "", nil, http.StatusOK)
		var convs float64
		raw, capped, signupCapped = nil, nil, nil
		for _, arm := range r.Body["arms"].([]any) {
			for _, g := range arm.(map[string]any)["goals"].([]any) {
				g := g.(map[string]any)
				if g["goal"] == "signup" {
					signupCapped = append(signupCapped, g["value_sum_capped"])
					continue
				}
				convs += g["conversions"].(float64)
				raw, capped = append(raw, g["value_sum"]), append(capped, g["value_sum_capped"])
			}
		}
		return convs == 3
	})

	var rawSum, cappedSum float64
	for i := range raw {
		rawSum += raw[i].(float64)
		require.NotNil(t, capped[i], "a capped goal has a capped sum on every arm")
		cappedSum += capped[i].(float64)
	}
	assert.Equal(t, 1e12+50, rawSum, "the raw sum as sent")
	assert.Equal(t, 150.0, cappedSum, "each user's value capped at 100: 100 + 50")
	assert.Equal(t, []any{nil, nil}, signupCapped, "a goal without a cap has none")

	// The console's goal table shows both sums.
	b := newBrowser(t, api)
	b.signIn()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id) + "/experiment"))
	b.waitFor(`document.querySelector('#goal-table-purchase')`)
	var heads []string
	b.eval(`[...document.querySelectorAll('#goal-table-purchase thead th')].map(c => c.textContent).slice(-2)`, &heads)
	assert.Equal(t, []string{"Value sum", "Value sum, each user capped"}, heads)
	var cappedCells []string
	b.eval(`[...document.querySelectorAll('#goal-table-purchase tbody tr')].map(r => r.cells[r.cells.length - 1].textContent)`, &cappedCells)
	assert.Len(t, cappedCells, 2)
	assert.Subset(t, []string{"150.00", "100.00", "50.00", "0.00"}, cappedCells)
	b.axeCheck("experiment results with a capped goal")

	// The cap is read when the results are: removed, the capped sum goes.
	c.Do(t, "PUT", "/admin/v1/goals/purchase", `{"name":"Purchase","value":"sum","value_cap":null}`, nil, http.StatusOK)
	r := c.Do(t, "GET", "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/results", "", nil, http.StatusOK)
	for _, arm := range r.Body["arms"].([]any) {
		assert.Nil(t, arm.(map[string]any)["goals"].([]any)[0].(map[string]any)["value_sum_capped"])
	}
}

// TestGoalValueCapInCampaignConversions: a popup's conversions (docs/CONTRACT.md §8) cap each
// user's value, the sum of their conversions counted, at the goal's value_cap beside the raw sum.
func TestGoalValueCapInCampaignConversions(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "purchase", "name": "Purchase", "value": "sum", "value_cap": 100})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := in.CreatePopup(t, apitest.PopupSpec("campaign-cap", nil))
	at := time.Now().UTC().Truncate(24 * time.Hour).Add(-12 * time.Hour)
	evs := []event.Event{
		{ID: "i1", UID: "whale", PopupID: id, Action: event.Impression, At: at, DecisionID: "d1"},
		{ID: "v1", UID: "whale", Action: event.Conversion, Goal: "purchase", Value: 6e11, At: at.Add(time.Hour)},
		{ID: "v2", UID: "whale", Action: event.Conversion, Goal: "purchase", Value: 4e11, At: at.Add(2 * time.Hour)},
		{ID: "i2", UID: "minnow", PopupID: id, Action: event.Impression, At: at, DecisionID: "d2"},
		{ID: "c2", UID: "minnow", PopupID: id, Action: event.Click, At: at.Add(time.Second), DecisionID: "d2"},
		{ID: "v3", UID: "minnow", Action: event.Conversion, Goal: "purchase", Value: 50, At: at.Add(time.Hour)},
	}
	require.NoError(t, mysqlstore.NewEventWriter(apitest.DB(t, cfg)).WriteBatch(context.Background(), evs))

	spec := apitest.NewSpecChecker(t, in.Public, in.Admin)
	status, body, _ := spec.Do(t, apitest.Call{Method: http.MethodGet, URL: "http://" + in.Admin + "/admin/v1/popups/" + apitest.Itoa(id) + "/stats",
		Header: map[string]string{"Authorization": "Bearer " + cfg.AdminToken}, Want: []int{http.StatusOK}})
	require.Equal(t, http.StatusOK, status)
	type conv struct {
		ValueSum        float64  `json:"value_sum"`
		MeanValue       *float64 `json:"mean_value"`
		ValueSumCapped  *float64 `json:"value_sum_capped"`
		MeanValueCapped *float64 `json:"mean_value_capped"`
	}
	var got struct {
		Goals []struct {
			Shown, Clicked conv
		}
	}
	require.NoError(t, json.Unmarshal(body, &got))
	require.Len(t, got.Goals, 1)
	f := func(v float64) *float64 { return &v }
	assert.Equal(t, conv{ValueSum: 1e12 + 50, MeanValue: f((1e12 + 50) / 2), ValueSumCapped: f(150), MeanValueCapped: f(75)}, got.Goals[0].Shown)
	assert.Equal(t, conv{ValueSum: 50, MeanValue: f(50), ValueSumCapped: f(50), MeanValueCapped: f(50)}, got.Goals[0].Clicked)
}
