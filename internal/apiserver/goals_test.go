package apiserver_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Goals through the admin API of a real popup-api on MariaDB and Redis (docs/CONTRACT.md §14):
// the CRUD, its refusals, the roles, the history, and an experiment's primary_goal, which must
// name a goal and keeps it from being deleted or recounted while the experiment runs. Every answer
// is checked against api/openapi.yaml.
func TestGoalsAdmin(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer", "ed@editor:tok-editor"}
	api := start(t, cfg, newClock())
	c := expClient{s: newSpecChecker(t, api.public, api.admin), adm: "http://" + api.admin}
	as := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	created := c.do(t, "POST", "/admin/v1/goals", `{"key":"purchase","name":"Purchase","value":"sum"}`, nil, http.StatusCreated)
	assert.Equal(t, `"1"`, created.etag)
	assert.Equal(t, "purchase", created.body["key"])
	assert.Equal(t, 72.0, created.body["window_hours"], "the default window")
	assert.Equal(t, "sum", created.body["value"])
	signup := c.do(t, "POST", "/admin/v1/goals", `{"key":"signup","name":"Sign-up","window_hours":24}`, nil, http.StatusCreated)
	assert.Equal(t, "none", signup.body["value"], "the default value")

	t.Run("bad goals are 400s naming every field", func(t *testing.T) {
		tests := []struct {
			give, field string
		}{
			{`{"key":"Purchase!","name":"x"}`, "key"},
			{`{"key":"","name":"x"}`, "key"},
			{`{"name":"x"}`, "key"},
			{`{"key":"k"}`, "name"},
			{`{"key":"k","name":"   "}`, "name"},
			{`{"key":"k","name":"x","window_hours":0}`, "window_hours"},
			{`{"key":"k","name":"x","window_hours":721}`, "window_hours"},
			{`{"key":"k","name":"x","value":"max"}`, "value"},
			{`{"key":"k","name":"x","value":"sum","value_cap":0}`, "value_cap"},
			{`{"key":"k","name":"x","value":"sum","value_cap":-5}`, "value_cap"},
			{`{"key":"k","name":"x","value":"sum","value_cap":"10"}`, "value_cap"},
			{`{"key":"k","name":"x","value_cap":10}`, "value_cap"}, // a none goal has no value to cap
			{`{"key":"k","name":"x","colour":"red"}`, ""},
		}
		for _, tt := range tests {
			a := c.do(t, "POST", "/admin/v1/goals", tt.give, nil, http.StatusBadRequest)
			_, field := a.errorOf(t)
			if tt.field != "" {
				assert.Equal(t, tt.field, field, tt.give)
			}
		}
		a := c.do(t, "POST", "/admin/v1/goals", `{"key":"purchase","name":"Again"}`, nil, http.StatusConflict)
		code, field := a.errorOf(t)
		assert.Equal(t, "name_taken", code)
		assert.Equal(t, "key", field)
		a = c.do(t, "GET", "/admin/v1/goals/NOPE", "", nil, http.StatusBadRequest)
		_, field = a.errorOf(t)
		assert.Equal(t, "key", field)
		a = c.do(t, "GET", "/admin/v1/goals/nope", "", nil, http.StatusNotFound)
		code, _ = a.errorOf(t)
		assert.Equal(t, "goal_not_found", code)
		c.do(t, "PUT", "/admin/v1/goals/signup", `{"key":"other","name":"x"}`, nil, http.StatusBadRequest)
	})

	t.Run("a viewer and an editor read goals and change none", func(t *testing.T) {
		for _, tok := range []string{"tok-viewer", "tok-editor"} {
			list := c.do(t, "GET", "/admin/v1/goals", "", as(tok), http.StatusOK)
			require.Len(t, list.body["goals"], 2)
			assert.Equal(t, "purchase", list.body["goals"].([]any)[0].(map[string]any)["key"], "by key")
			a := c.do(t, "POST", "/admin/v1/goals", `{"key":"k","name":"x"}`, as(tok), http.StatusForbidden)
			assert.Equal(t, "publisher", a.body["error"].(map[string]any)["role_needed"])
			c.do(t, "DELETE", "/admin/v1/goals/signup", "", as(tok), http.StatusForbidden)
			a = c.do(t, "POST", "/admin/v1/ingest-keys", `{"name":"backend"}`, as(tok), http.StatusForbidden)
			assert.Equal(t, "admin", a.body["error"].(map[string]any)["role_needed"], "ingest keys are an admin's")
			c.do(t, "GET", "/admin/v1/ingest-keys", "", as(tok), http.StatusForbidden)
		}
	})

	t.Run("a PUT writes a new version, a PUT that changes nothing none, a stale If-Match nothing", func(t *testing.T) {
		put := c.do(t, "PUT", "/admin/v1/goals/signup", `{"name":"Signed up","window_hours":48}`, nil, http.StatusOK)
		assert.Equal(t, `"2"`, put.etag)
		assert.Equal(t, 48.0, put.body["window_hours"])
		same := c.do(t, "PUT", "/admin/v1/goals/signup", `{"name":"Signed up","window_hours":48}`, nil, http.StatusOK)
		assert.Equal(t, `"2"`, same.etag)
		c.do(t, "PUT", "/admin/v1/goals/signup", `{"name":"Late"}`, map[string]string{"If-Match": `"1"`}, http.StatusPreconditionFailed)
		got := c.do(t, "GET", "/admin/v1/goals/signup", "", nil, http.StatusOK)
		assert.Equal(t, "Signed up", got.body["name"])
	})

	t.Run("an experiment's primary goal must exist and is held while it runs", func(t *testing.T) {
		body := `{"name":"goal-exp","status":"active","title":"own","experiment":{"primary_goal":%s,
			"variants":[{"key":"a","weight":50,"title":"A"},{"key":"b","weight":50,"title":"B"}]}}`
		with := func(goal string) string { return strings.Replace(body, "%s", goal, 1) }
		a := c.do(t, "POST", "/admin/v1/popups", with(`"refund"`), nil, http.StatusBadRequest)
		code, field := a.errorOf(t)
		assert.Equal(t, "validation_failed", code)
		assert.Equal(t, "experiment.primary_goal", field)
		a = c.do(t, "POST", "/admin/v1/popups", with(`"Bad Key"`), nil, http.StatusBadRequest)
		_, field = a.errorOf(t)
		assert.Equal(t, "experiment.primary_goal", field)

		p := c.do(t, "POST", "/admin/v1/popups", with(`"purchase"`), nil, http.StatusCreated)
		assert.Equal(t, "purchase", experimentOf(t, p)["primary_goal"])
		id := itoa(int64(p.body["id"].(float64)))
		c.do(t, "DELETE", "/admin/v1/goals/purchase", "", nil, http.StatusOK) // a draft does not hold it
		c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", nil, http.StatusBadRequest)
		c.do(t, "POST", "/admin/v1/goals", `{"key":"purchase","name":"Purchase","value":"sum"}`, nil, http.StatusCreated)
		c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", nil, http.StatusOK)

		a = c.do(t, "DELETE", "/admin/v1/goals/purchase", "", nil, http.StatusConflict)
		code, _ = a.errorOf(t)
		assert.Equal(t, "goal_in_use", code)
		c.do(t, "PUT", "/admin/v1/goals/purchase", `{"name":"Purchase","value":"none"}`, nil, http.StatusConflict)
		c.do(t, "PUT", "/admin/v1/goals/purchase", `{"name":"Purchase","window_hours":24,"value":"sum"}`, nil, http.StatusConflict)
		renamed := c.do(t, "PUT", "/admin/v1/goals/purchase", `{"name":"Order placed","value":"sum"}`, nil, http.StatusOK)
		assert.Equal(t, "Order placed", renamed.body["name"], "a new name changes no count")

		c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/stop", "", nil, http.StatusOK)
		deleted := c.do(t, "DELETE", "/admin/v1/goals/purchase", "", nil, http.StatusOK)
		assert.Equal(t, "Order placed", deleted.body["name"])
		c.do(t, "GET", "/admin/v1/goals/purchase", "", nil, http.StatusNotFound)

		hist := c.do(t, "GET", "/admin/v1/goals/purchase/history", "", nil, http.StatusOK)
		var actions []string
		for _, ch := range hist.body["changes"].([]any) {
			actions = append(actions, ch.(map[string]any)["action"].(string))
		}
		assert.Equal(t, []string{"delete", "update", "create", "delete", "create"}, actions, "newest first, across the re-creation")
		first := hist.body["changes"].([]any)[0].(map[string]any)
		assert.Equal(t, "admin", first["actor"])
		assert.Nil(t, first["after"])
		assert.Equal(t, "Order placed", first["before"].(map[string]any)["name"])
	})

	t.Run("a PUT or an import whose experiment has no primary_goal keeps it; null removes it", func(t *testing.T) {
		body := `{"name":"goal-kept","status":"active","title":"own","max_impressions":%d,"experiment":{%s
			"variants":[{"key":"a","weight":50,"title":"A"},{"key":"b","weight":50,"title":"B"}]}}`
		with := func(maxImpressions int, goal string) string { return fmt.Sprintf(body, maxImpressions, goal) }
		p := c.do(t, "POST", "/admin/v1/popups", with(1, `"primary_goal":"signup",`), nil, http.StatusCreated)
		id := itoa(int64(p.body["id"].(float64)))
		put := c.do(t, "PUT", "/admin/v1/popups/"+id, with(2, ""), nil, http.StatusOK)
		assert.Equal(t, 2.0, put.body["max_impressions"])
		assert.Equal(t, "signup", experimentOf(t, put)["primary_goal"], "a PUT without the key keeps the goal")
		imp := c.do(t, "POST", "/admin/v1/import", `{"popups":[`+with(3, "")+`]}`, nil, http.StatusOK)
		assert.Equal(t, 1.0, imp.body["updated"])
		got := c.do(t, "GET", "/admin/v1/popups/"+id, "", nil, http.StatusOK)
		assert.Equal(t, 3.0, got.body["max_impressions"])
		assert.Equal(t, "signup", experimentOf(t, got)["primary_goal"], "an import without the key keeps the goal")
		put = c.do(t, "PUT", "/admin/v1/popups/"+id, with(3, `"primary_goal":null,`), nil, http.StatusOK)
		assert.Nil(t, experimentOf(t, put)["primary_goal"], "null removes it")
	})

	t.Run("a value cap is stored, audited, and a PUT without it removes it", func(t *testing.T) {
		g := c.do(t, "POST", "/admin/v1/goals", `{"key":"revenue","name":"Revenue","value":"sum","value_cap":250.5}`, nil, http.StatusCreated)
		assert.Equal(t, 250.5, g.body["value_cap"])
		same := c.do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"sum","value_cap":250.5}`, nil, http.StatusOK)
		assert.Equal(t, `"1"`, same.etag, "the same cap changes nothing")
		put := c.do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"sum","value_cap":300}`, nil, http.StatusOK)
		assert.Equal(t, `"2"`, put.etag)
		got := c.do(t, "GET", "/admin/v1/goals/revenue", "", nil, http.StatusOK)
		assert.Equal(t, 300.0, got.body["value_cap"])
		hist := c.do(t, "GET", "/admin/v1/goals/revenue/history", "", nil, http.StatusOK)
		last := hist.body["changes"].([]any)[0].(map[string]any)
		assert.Equal(t, 250.5, last["before"].(map[string]any)["value_cap"])
		assert.Equal(t, 300.0, last["after"].(map[string]any)["value_cap"])
		off := c.do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"sum"}`, nil, http.StatusOK)
		assert.Equal(t, `"3"`, off.etag)
		assert.Nil(t, off.body["value_cap"], "absent: no cap")
		a := c.do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"none","value_cap":5}`, nil, http.StatusBadRequest)
		_, field := a.errorOf(t)
		assert.Equal(t, "value_cap", field)
	})
}

func (in *instance) ingestKey(t *testing.T) string {
	t.Helper()
	return in.IngestKey(t)
}

func (in *instance) conversionAs(t *testing.T, key string, body any) response {
	t.Helper()
	return in.ConversionAs(t, key, body)
}

func keyed(key string) map[string]string { return apitest.Keyed(key) }

// TestABatchRefusesOnlyTheConversionsOfARateLimitedUID: a uid over POPUP_ACTION_RATE_LIMIT
// refuses its own conversions of a batch, named by index in a 429 with Retry-After; every other
// conversion of the batch is queued and written (docs/CONTRACT.md §14).
func TestABatchRefusesOnlyTheConversionsOfARateLimitedUID(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ActionRateLimit = 2
	api := start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	db := apitest.DB(t, cfg)
	res := api.adminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "signup", "name": "Sign-up"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	eventually(t, 10*time.Second, "the goal is accepted", func() bool {
		return api.Conversion(t, map[string]any{"uid": "probe", "goal": "signup", "event_id": "probe"}).Status == http.StatusAccepted
	})
	var batch []map[string]any
	for i, uid := range []string{"hot", "cold-1", "hot", "hot", "cold-2", "hot"} {
		batch = append(batch, map[string]any{"uid": uid, "goal": "signup", "event_id": "e" + itoa(int64(i))})
	}
	res = api.do(t, http.MethodPost, "http://"+api.public+"/api/v1/conversions/batch", map[string]any{"conversions": batch}, nil)
	require.Equal(t, http.StatusTooManyRequests, res.Status, res.Raw)
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	code, _ := errorOf(t, res)
	assert.Equal(t, "rate_limited", code)
	var fields []string
	list, _ := res.Body["error"].(map[string]any)["fields"].([]any)
	for _, f := range list {
		fields = append(fields, f.(map[string]any)["field"].(string))
	}
	assert.Equal(t, []string{"conversions[3].uid", "conversions[5].uid"}, fields, "the hot uid's conversions over its limit of 2, and only those")
	eventually(t, 15*time.Second, "the others are written", func() bool {
		return apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid LIKE 'cold-%'`) == 2 &&
			apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid = 'hot'`) == 2
	})
	assert.Equal(t, 2, apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid = 'hot' AND event_id IN ('e0', 'e2')`))
}
