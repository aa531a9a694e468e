package results_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/popup"
)

// TestHoldoutThroughTheService: the global holdout on a real popup-api and its worker, MariaDB and
// Redis (docs/CONTRACT.md §15). The setting's refusals name holdout_percent; a user held out gets
// only the holdout-exempt popup, another the popup; both convert, and the results compare the two
// groups on the goal, per phase; a new percentage starts phase 2 with the same salt. Every answer
// is checked against api/openapi.yaml.
func TestHoldoutThroughTheService(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	c := apitest.AdminClient{Spec: apitest.NewSpecChecker(t, api.Public, api.Admin), Base: "http://" + api.Admin}
	settings := func(extra string) string { return `{"reporting_time_zone":"UTC"` + extra + `}` }

	got := c.Do(t, "GET", "/admin/v1/settings", "", nil, http.StatusOK)
	assert.Equal(t, 0.0, got.Body["holdout_percent"], "no holdout by default")
	notYet := c.Do(t, "GET", "/admin/v1/holdout/results", "", nil, http.StatusNotFound)
	code, _ := notYet.ErrorOf(t)
	assert.Equal(t, "holdout_missing", code)
	for _, give := range []string{`21`, `-1`, `2.5`, `"10"`, `null`} {
		bad := c.Do(t, "PUT", "/admin/v1/settings", settings(`,"holdout_percent":`+give), nil, http.StatusBadRequest)
		_, field := bad.ErrorOf(t)
		assert.Equal(t, "holdout_percent", field, give)
	}

	res := api.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "purchase", "name": "Purchase", "value": "sum", "value_cap": 20})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	campaign := api.CreatePopup(t, apitest.PopupSpec("campaign", map[string]any{"priority": 10}))
	notice := api.CreatePopup(t, apitest.PopupSpec("notice", map[string]any{"priority": 1, "holdout_exempt": true}))
	stored := c.Do(t, "GET", "/admin/v1/popups/"+apitest.Itoa(notice), "", nil, http.StatusOK)
	assert.Equal(t, true, stored.Body["holdout_exempt"])

	set := c.Do(t, "PUT", "/admin/v1/settings", settings(`,"holdout_percent":20`), nil, http.StatusOK)
	assert.Equal(t, 20.0, set.Body["holdout_percent"])
	first := c.Do(t, "GET", "/admin/v1/holdout/results", "", nil, http.StatusOK)
	assert.Equal(t, 1.0, first.Body["phase"])
	assert.Equal(t, true, first.Body["running"])
	salt := first.Body["salt"].(string)
	check := popup.Holdout{Percent: 20, Salt: salt, Phase: 1}.Check()
	var heldUID, otherUID string
	for i := 0; heldUID == "" || otherUID == ""; i++ {
		uid := "hu-" + strconv.Itoa(i)
		if check.Holds(uid) {
			heldUID = uid
		} else {
			otherUID = uid
		}
	}

	shown := func(uid string) float64 {
		_, r := api.Get(t, "uid="+url.QueryEscape(uid)+"&platform=ios&app_version=8.10.0")
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		return r.Body["popup"].(map[string]any)["id"].(float64)
	}
	assert.Equal(t, float64(notice), shown(heldUID), "held out: only the exempt notice")
	assert.Equal(t, float64(campaign), shown(otherUID), "the others: the campaign")
	preview := c.Do(t, "GET", "/admin/v1/preview?uid="+heldUID+"&platform=ios&app_version=8.10.0", "", nil, http.StatusOK)
	assert.Equal(t, "holdout", preview.Body["candidates"].([]any)[0].(map[string]any)["reason"], "the preview names the holdout")

	key := api.IngestKey(t)
	for uid, value := range map[string]float64{heldUID: 10, otherUID: 30} {
		r := api.ConversionAs(t, key, map[string]any{"uid": uid, "goal": "purchase", "event_id": "order-" + uid, "value": value})
		require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	}
	var results apitest.Answer
	apitest.Eventually(t, 15*time.Second, "the worker counts both groups' conversions", func() bool {
		results = c.Do(t, "GET", "/admin/v1/holdout/results", "", nil, http.StatusOK)
		for _, g := range results.Body["groups"].([]any) {
			// (the two users' exposures and conversions may come in different batches)
			goals := g.(map[string]any)["goals"].([]any)
			if len(goals) == 0 || goals[0].(map[string]any)["converted_users"].(float64) < 1 || g.(map[string]any)["exposed_users"].(float64) < 1 {
				return false
			}
		}
		return true
	})
	groups := results.Body["groups"].([]any)
	require.Len(t, groups, 2)
	held, others := groups[0].(map[string]any), groups[1].(map[string]any)
	assert.Equal(t, "holdout", held["group"])
	assert.Equal(t, 20.0, held["percent"])
	assert.Equal(t, "others", others["group"])
	assert.Equal(t, 1.0, held["exposed_users"])
	assert.Equal(t, 1.0, others["exposed_users"])
	assert.Equal(t, "holdout", results.Body["baseline"])
	hg, og := held["goals"].([]any)[0].(map[string]any), others["goals"].([]any)[0].(map[string]any)
	assert.Equal(t, 10.0, hg["value_sum"])
	assert.Equal(t, 30.0, og["value_sum"])
	assert.Equal(t, 10.0, hg["value_sum_capped"], "under the cap of 20")
	assert.Equal(t, 20.0, og["value_sum_capped"], "30 capped at 20")
	assert.Equal(t, 1.0, og["rate"])
	assert.Nil(t, hg["difference"], "the holdout is the baseline")
	assert.Contains(t, results.Body, "srm")

	t.Run("phases and cohorts", func(t *testing.T) {
		// Yesterday and today: the users were first exposed today, or yesterday if UTC midnight
		// has passed since.
		now := time.Now().UTC()
		from, day := now.AddDate(0, 0, -1).Format(time.DateOnly), now.Format(time.DateOnly)
		cohort := c.Do(t, "GET", "/admin/v1/holdout/results?from="+from+"&to="+day, "", nil, http.StatusOK)
		assert.Equal(t, from, cohort.Body["from"])
		assert.Equal(t, 1.0, cohort.Body["groups"].([]any)[1].(map[string]any)["exposed_users"])
		assert.Equal(t, 20.0, cohort.Body["groups"].([]any)[1].(map[string]any)["goals"].([]any)[0].(map[string]any)["value_sum_capped"], "a cohort's users capped too")
		empty := c.Do(t, "GET", "/admin/v1/holdout/results?from=2020-01-01&to=2020-01-02", "", nil, http.StatusOK)
		assert.Equal(t, 0.0, empty.Body["groups"].([]any)[1].(map[string]any)["exposed_users"], "nobody first exposed then")

		c.Do(t, "PUT", "/admin/v1/settings", settings(`,"holdout_percent":10`), nil, http.StatusOK)
		second := c.Do(t, "GET", "/admin/v1/holdout/results", "", nil, http.StatusOK)
		assert.Equal(t, 2.0, second.Body["phase"])
		assert.Equal(t, salt, second.Body["salt"], "a new phase keeps the salt")
		assert.Len(t, second.Body["phases"], 2)
		old := c.Do(t, "GET", "/admin/v1/holdout/results?phase=1", "", nil, http.StatusOK)
		assert.Equal(t, false, old.Body["running"])
		assert.Equal(t, 1.0, old.Body["groups"].([]any)[0].(map[string]any)["exposed_users"])

		for _, tt := range []struct {
			query, code, field string
			status             int
		}{
			{"?phase=3", "phase_not_found", "phase", http.StatusNotFound},
			{"?phase=0", "invalid_query", "phase", http.StatusBadRequest},
			{"?phase=x", "invalid_query", "phase", http.StatusBadRequest},
			{"?from=27-11-2026", "invalid_query", "from", http.StatusBadRequest},
			{"?from=2026-11-27&to=2026-11-01", "invalid_query", "from", http.StatusBadRequest},
			{"?tz=Mars/Olympus", "invalid_query", "tz", http.StatusBadRequest},
		} {
			a := c.Do(t, "GET", "/admin/v1/holdout/results"+tt.query, "", nil, tt.status)
			code, field := a.ErrorOf(t)
			assert.Equal(t, tt.code, code, tt.query)
			assert.Equal(t, tt.field, field, tt.query)
		}
	})
}
