package browsertest

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
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
)

// TestConversionsOfEveryCampaign (issue 49, 3): popups without an experiment report, per goal,
// the users who converted within the goal's window after being shown the popup, and after
// clicking it, their conversions, value sum and value per converted user, over the range's
// conversion times, in JSON (as api/openapi.yaml says) and in the CSV. A user who saw two popups
// in the window counts for each (Braze's rule); a conversion before the impression, or after the
// window, counts for none; a goal without values sums nothing. (Before, the stats had no goals.)
func TestConversionsOfEveryCampaign(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	for _, g := range []map[string]any{{"key": "purchase", "name": "Purchase", "value": "sum", "window_hours": 24}, {"key": "signup", "name": "Sign-up", "window_hours": 1}} {
		res := in.AdminDo(t, http.MethodPost, "/admin/v1/goals", g)
		require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	}
	one := in.CreatePopup(t, apitest.PopupSpec("campaign-one", nil))
	two := in.CreatePopup(t, apitest.PopupSpec("campaign-two", nil))
	// Days of the reporting zone (UTC): everything at noon yesterday and today, well inside both.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	at := today.Add(-12 * time.Hour) // yesterday noon
	var evs []event.Event
	n := 0
	show := func(uid string, popupID int64, when time.Time, clicked bool) {
		n++
		evs = append(evs, event.Event{ID: "i" + apitest.Itoa(int64(n)), UID: uid, PopupID: popupID, Action: event.Impression, At: when, DecisionID: "d" + apitest.Itoa(int64(n))})
		if clicked {
			evs = append(evs, event.Event{ID: "c" + apitest.Itoa(int64(n)), UID: uid, PopupID: popupID, Action: event.Click, At: when.Add(time.Second), DecisionID: "d" + apitest.Itoa(int64(n))})
		}
	}
	convert := func(uid, goal string, when time.Time, value float64) {
		n++
		evs = append(evs, event.Event{ID: "v" + apitest.Itoa(int64(n)), UID: uid, Action: event.Conversion, Goal: goal, Value: value, At: when})
	}
	show("shown", one, at, false)
	convert("shown", "purchase", at.Add(time.Hour), 30) // one, shown
	show("clicker", one, at, true)
	convert("clicker", "purchase", at.Add(2*time.Hour), 10) // one, shown and clicked, twice
	convert("clicker", "purchase", at.Add(3*time.Hour), 20)
	convert("clicker", "signup", at.Add(30*time.Minute), 99) // a goal without values: 0
	convert("clicker", "signup", at.Add(2*time.Hour), 0)     // after signup's one-hour window
	show("both", one, at, false)
	show("both", two, at.Add(time.Hour), true)
	convert("both", "purchase", at.Add(2*time.Hour), 50) // each popup shown in the window counts it
	show("late", one, at.Add(-30*time.Hour), false)
	convert("late", "purchase", at, 70) // 30 hours after: outside purchase's 24
	convert("before", "purchase", at.Add(-time.Hour), 80)
	show("before", one, at, false) // shown after the conversion: counts nothing
	show("other", two, at, false)
	convert("other", "purchase", at.Add(time.Hour), 90) // popup two only
	require.NoError(t, mysqlstore.NewEventWriter(apitest.DB(t, cfg)).WriteBatch(context.Background(), evs))

	spec := apitest.NewSpecChecker(t, in.Public, in.Admin)
	auth := map[string]string{"Authorization": "Bearer " + cfg.AdminToken}
	type conv struct {
		users, conversions int64
		sum                float64
		mean               any
	}
	goalOf := func(id int64, query string) map[string][2]conv {
		status, body, _ := spec.Do(t, apitest.Call{Method: http.MethodGet, URL: "http://" + in.Admin + "/admin/v1/popups/" + apitest.Itoa(id) + "/stats" + query, Header: auth, Want: []int{http.StatusOK}})
		require.Equal(t, http.StatusOK, status)
		var got struct {
			Goals []struct {
				Goal           string
				Shown, Clicked struct {
					ConvertedUsers int64   `json:"converted_users"`
					Conversions    int64   `json:"conversions"`
					ValueSum       float64 `json:"value_sum"`
					MeanValue      any     `json:"mean_value"`
				}
				Complete bool
			}
		}
		require.NoError(t, json.Unmarshal(body, &got))
		out := map[string][2]conv{}
		for _, g := range got.Goals {
			assert.True(t, g.Complete, "the action log keeps the range")
			out[g.Goal] = [2]conv{{g.Shown.ConvertedUsers, g.Shown.Conversions, g.Shown.ValueSum, g.Shown.MeanValue},
				{g.Clicked.ConvertedUsers, g.Clicked.Conversions, g.Clicked.ValueSum, g.Clicked.MeanValue}}
		}
		return out
	}
	assert.Equal(t, map[string][2]conv{
		"purchase": {{3, 4, 110, 110.0 / 3}, {1, 2, 30, 30.0}},
		"signup":   {{1, 1, 0, nil}, {1, 1, 0, nil}},
	}, goalOf(one, ""), "popup one: shown, clicker (twice), both; not late, not before")
	assert.Equal(t, map[string][2]conv{
		"purchase": {{2, 2, 140, 70.0}, {1, 1, 50, 50.0}},
		"signup":   {{0, 0, 0, nil}, {0, 0, 0, nil}},
	}, goalOf(two, ""), "popup two: both (clicked) and other")
	// The range is the conversions' days: none today.
	d := today.Format(time.DateOnly)
	assert.Equal(t, map[string][2]conv{"purchase": {{0, 0, 0, nil}, {0, 0, 0, nil}}, "signup": {{0, 0, 0, nil}, {0, 0, 0, nil}}},
		goalOf(one, "?from="+d+"&to="+d))

	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(one)+"/stats.csv", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	all, err := csv.NewReader(strings.NewReader(res.Raw)).ReadAll()
	require.NoError(t, err, "every row as wide as the others")
	var rows [][]string
	for _, r := range all {
		if strings.HasPrefix(r[0], "goal") {
			rows = append(rows, r[:8])
		}
	}
	assert.Equal(t, [][]string{
		{"goal", "attributed after", "converted users", "conversions", "value sum", "value per converted user", "window hours", "complete"},
		{"goal: purchase", "shown", "3", "4", "110", "36.666666666666664", "24", "true"},
		{"goal: purchase", "clicked", "1", "2", "30", "30", "24", "true"},
		{"goal: signup", "shown", "1", "1", "0", "", "1", "true"},
		{"goal: signup", "clicked", "1", "1", "0", "", "1", "true"},
	}, rows)
}

// TestConsoleConversionsOfACampaign: the popup's results page shows its conversions per goal,
// after being shown and after clicking, from the stats answer, and passes axe.
func TestConsoleConversionsOfACampaign(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "purchase", "name": "Purchase", "value": "sum", "window_hours": 24})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := in.CreatePopup(t, apitest.PopupSpec("campaign", map[string]any{"image_url": ""}))
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	require.NoError(t, mysqlstore.NewEventWriter(apitest.DB(t, cfg)).WriteBatch(context.Background(), []event.Event{
		{ID: "i1", UID: "u1", PopupID: id, Action: event.Impression, At: at, DecisionID: "d1"},
		{ID: "c1", UID: "u1", PopupID: id, Action: event.Click, At: at.Add(time.Second), DecisionID: "d1"},
		{ID: "i2", UID: "u2", PopupID: id, Action: event.Impression, At: at, DecisionID: "d2"},
		{ID: "v1", UID: "u1", Action: event.Conversion, Goal: "purchase", Value: 12.5, At: at.Add(time.Minute)},
		{ID: "v2", UID: "u2", Action: event.Conversion, Goal: "purchase", Value: 7.5, At: at.Add(time.Minute)},
	}))
	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 1)
	b.waitFor(`document.querySelector('#results-goals tr[data-goal="purchase"][data-after="clicked"]')`)
	var shown, clicked []string
	b.eval(`[...document.querySelectorAll('#results-goals tr[data-goal="purchase"][data-after="shown"] td')].map(td => td.textContent)`, &shown)
	b.eval(`[...document.querySelectorAll('#results-goals tr[data-goal="purchase"][data-after="clicked"] td')].map(td => td.textContent)`, &clicked)
	assert.Equal(t, []string{"24 h", "shown the popup", "2", "2", "20.00", "10.00"}, shown)
	assert.Equal(t, []string{"clicked the popup", "1", "1", "12.50", "12.50"}, clicked)
	assert.Contains(t, b.text(`#results-goals tr[data-goal="purchase"][data-after="shown"] th`), "Purchase (purchase)")
	b.axeCheck("popup results with conversions")
}
