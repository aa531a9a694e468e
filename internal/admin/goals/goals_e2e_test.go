package goals_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

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
	cfg := apitest.Config(t)
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer", "ed@editor:tok-editor"}
	api := apitest.Start(t, cfg, apitest.NewClock())
	c := apitest.AdminClient{Spec: apitest.NewSpecChecker(t, api.Public, api.Admin), Base: "http://" + api.Admin}
	as := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	created := c.Do(t, "POST", "/admin/v1/goals", `{"key":"purchase","name":"Purchase","value":"sum"}`, nil, http.StatusCreated)
	assert.Equal(t, `"1"`, created.ETag)
	assert.Equal(t, "purchase", created.Body["key"])
	assert.Equal(t, 72.0, created.Body["window_hours"], "the default window")
	assert.Equal(t, "sum", created.Body["value"])
	signup := c.Do(t, "POST", "/admin/v1/goals", `{"key":"signup","name":"Sign-up","window_hours":24}`, nil, http.StatusCreated)
	assert.Equal(t, "none", signup.Body["value"], "the default value")

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
			a := c.Do(t, "POST", "/admin/v1/goals", tt.give, nil, http.StatusBadRequest)
			_, field := a.ErrorOf(t)
			if tt.field != "" {
				assert.Equal(t, tt.field, field, tt.give)
			}
		}
		a := c.Do(t, "POST", "/admin/v1/goals", `{"key":"purchase","name":"Again"}`, nil, http.StatusConflict)
		code, field := a.ErrorOf(t)
		assert.Equal(t, "name_taken", code)
		assert.Equal(t, "key", field)
		a = c.Do(t, "GET", "/admin/v1/goals/NOPE", "", nil, http.StatusBadRequest)
		_, field = a.ErrorOf(t)
		assert.Equal(t, "key", field)
		a = c.Do(t, "GET", "/admin/v1/goals/nope", "", nil, http.StatusNotFound)
		code, _ = a.ErrorOf(t)
		assert.Equal(t, "goal_not_found", code)
		c.Do(t, "PUT", "/admin/v1/goals/signup", `{"key":"other","name":"x"}`, nil, http.StatusBadRequest)
	})

	t.Run("a viewer and an editor read goals and change none", func(t *testing.T) {
		for _, tok := range []string{"tok-viewer", "tok-editor"} {
			list := c.Do(t, "GET", "/admin/v1/goals", "", as(tok), http.StatusOK)
			require.Len(t, list.Body["goals"], 2)
			assert.Equal(t, "purchase", list.Body["goals"].([]any)[0].(map[string]any)["key"], "by key")
			a := c.Do(t, "POST", "/admin/v1/goals", `{"key":"k","name":"x"}`, as(tok), http.StatusForbidden)
			assert.Equal(t, "publisher", a.Body["error"].(map[string]any)["role_needed"])
			c.Do(t, "DELETE", "/admin/v1/goals/signup", "", as(tok), http.StatusForbidden)
			a = c.Do(t, "POST", "/admin/v1/ingest-keys", `{"name":"backend"}`, as(tok), http.StatusForbidden)
			assert.Equal(t, "admin", a.Body["error"].(map[string]any)["role_needed"], "ingest keys are an admin's")
			c.Do(t, "GET", "/admin/v1/ingest-keys", "", as(tok), http.StatusForbidden)
		}
	})

	t.Run("a PUT writes a new version, a PUT that changes nothing none, a stale If-Match nothing", func(t *testing.T) {
		put := c.Do(t, "PUT", "/admin/v1/goals/signup", `{"name":"Signed up","window_hours":48}`, nil, http.StatusOK)
		assert.Equal(t, `"2"`, put.ETag)
		assert.Equal(t, 48.0, put.Body["window_hours"])
		same := c.Do(t, "PUT", "/admin/v1/goals/signup", `{"name":"Signed up","window_hours":48}`, nil, http.StatusOK)
		assert.Equal(t, `"2"`, same.ETag)
		c.Do(t, "PUT", "/admin/v1/goals/signup", `{"name":"Late"}`, map[string]string{"If-Match": `"1"`}, http.StatusPreconditionFailed)
		got := c.Do(t, "GET", "/admin/v1/goals/signup", "", nil, http.StatusOK)
		assert.Equal(t, "Signed up", got.Body["name"])
	})

	t.Run("an experiment's primary goal must exist and is held while it runs", func(t *testing.T) {
		body := `{"name":"goal-exp","status":"active","title":"own","experiment":{"primary_goal":%s,
			"variants":[{"key":"a","weight":50,"title":"A"},{"key":"b","weight":50,"title":"B"}]}}`
		with := func(goal string) string { return strings.Replace(body, "%s", goal, 1) }
		a := c.Do(t, "POST", "/admin/v1/popups", with(`"refund"`), nil, http.StatusBadRequest)
		code, field := a.ErrorOf(t)
		assert.Equal(t, "validation_failed", code)
		assert.Equal(t, "experiment.primary_goal", field)
		a = c.Do(t, "POST", "/admin/v1/popups", with(`"Bad Key"`), nil, http.StatusBadRequest)
		_, field = a.ErrorOf(t)
		assert.Equal(t, "experiment.primary_goal", field)

		p := c.Do(t, "POST", "/admin/v1/popups", with(`"purchase"`), nil, http.StatusCreated)
		assert.Equal(t, "purchase", experimentOf(t, p)["primary_goal"])
		id := apitest.Itoa(int64(p.Body["id"].(float64)))
		c.Do(t, "DELETE", "/admin/v1/goals/purchase", "", nil, http.StatusOK) // a draft does not hold it
		c.Do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", nil, http.StatusBadRequest)
		c.Do(t, "POST", "/admin/v1/goals", `{"key":"purchase","name":"Purchase","value":"sum"}`, nil, http.StatusCreated)
		c.Do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", nil, http.StatusOK)

		a = c.Do(t, "DELETE", "/admin/v1/goals/purchase", "", nil, http.StatusConflict)
		code, _ = a.ErrorOf(t)
		assert.Equal(t, "goal_in_use", code)
		c.Do(t, "PUT", "/admin/v1/goals/purchase", `{"name":"Purchase","value":"none"}`, nil, http.StatusConflict)
		c.Do(t, "PUT", "/admin/v1/goals/purchase", `{"name":"Purchase","window_hours":24,"value":"sum"}`, nil, http.StatusConflict)
		renamed := c.Do(t, "PUT", "/admin/v1/goals/purchase", `{"name":"Order placed","value":"sum"}`, nil, http.StatusOK)
		assert.Equal(t, "Order placed", renamed.Body["name"], "a new name changes no count")

		c.Do(t, "POST", "/admin/v1/popups/"+id+"/experiment/stop", "", nil, http.StatusOK)
		deleted := c.Do(t, "DELETE", "/admin/v1/goals/purchase", "", nil, http.StatusOK)
		assert.Equal(t, "Order placed", deleted.Body["name"])
		c.Do(t, "GET", "/admin/v1/goals/purchase", "", nil, http.StatusNotFound)

		hist := c.Do(t, "GET", "/admin/v1/goals/purchase/history", "", nil, http.StatusOK)
		var actions []string
		for _, ch := range hist.Body["changes"].([]any) {
			actions = append(actions, ch.(map[string]any)["action"].(string))
		}
		assert.Equal(t, []string{"delete", "update", "create", "delete", "create"}, actions, "newest first, across the re-creation")
		first := hist.Body["changes"].([]any)[0].(map[string]any)
		assert.Equal(t, "admin", first["actor"])
		assert.Nil(t, first["after"])
		assert.Equal(t, "Order placed", first["before"].(map[string]any)["name"])
	})

	t.Run("a PUT or an import whose experiment has no primary_goal keeps it; null removes it", func(t *testing.T) {
		body := `{"name":"goal-kept","status":"active","title":"own","max_impressions":%d,"experiment":{%s
			"variants":[{"key":"a","weight":50,"title":"A"},{"key":"b","weight":50,"title":"B"}]}}`
		with := func(maxImpressions int, goal string) string { return fmt.Sprintf(body, maxImpressions, goal) }
		p := c.Do(t, "POST", "/admin/v1/popups", with(1, `"primary_goal":"signup",`), nil, http.StatusCreated)
		id := apitest.Itoa(int64(p.Body["id"].(float64)))
		put := c.Do(t, "PUT", "/admin/v1/popups/"+id, with(2, ""), nil, http.StatusOK)
		assert.Equal(t, 2.0, put.Body["max_impressions"])
		assert.Equal(t, "signup", experimentOf(t, put)["primary_goal"], "a PUT without the key keeps the goal")
		imp := c.Do(t, "POST", "/admin/v1/import", `{"popups":[`+with(3, "")+`]}`, nil, http.StatusOK)
		assert.Equal(t, 1.0, imp.Body["updated"])
		got := c.Do(t, "GET", "/admin/v1/popups/"+id, "", nil, http.StatusOK)
		assert.Equal(t, 3.0, got.Body["max_impressions"])
		assert.Equal(t, "signup", experimentOf(t, got)["primary_goal"], "an import without the key keeps the goal")
		put = c.Do(t, "PUT", "/admin/v1/popups/"+id, with(3, `"primary_goal":null,`), nil, http.StatusOK)
		assert.Nil(t, experimentOf(t, put)["primary_goal"], "null removes it")
	})

	t.Run("a value cap is stored, audited, and a PUT without it removes it", func(t *testing.T) {
		g := c.Do(t, "POST", "/admin/v1/goals", `{"key":"revenue","name":"Revenue","value":"sum","value_cap":250.5}`, nil, http.StatusCreated)
		assert.Equal(t, 250.5, g.Body["value_cap"])
		same := c.Do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"sum","value_cap":250.5}`, nil, http.StatusOK)
		assert.Equal(t, `"1"`, same.ETag, "the same cap changes nothing")
		put := c.Do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"sum","value_cap":300}`, nil, http.StatusOK)
		assert.Equal(t, `"2"`, put.ETag)
		got := c.Do(t, "GET", "/admin/v1/goals/revenue", "", nil, http.StatusOK)
		assert.Equal(t, 300.0, got.Body["value_cap"])
		hist := c.Do(t, "GET", "/admin/v1/goals/revenue/history", "", nil, http.StatusOK)
		last := hist.Body["changes"].([]any)[0].(map[string]any)
		assert.Equal(t, 250.5, last["before"].(map[string]any)["value_cap"])
		assert.Equal(t, 300.0, last["after"].(map[string]any)["value_cap"])
		off := c.Do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"sum"}`, nil, http.StatusOK)
		assert.Equal(t, `"3"`, off.ETag)
		assert.Nil(t, off.Body["value_cap"], "absent: no cap")
		a := c.Do(t, "PUT", "/admin/v1/goals/revenue", `{"name":"Revenue","value":"none","value_cap":5}`, nil, http.StatusBadRequest)
		_, field := a.ErrorOf(t)
		assert.Equal(t, "value_cap", field)
	})
}

// experimentOf is the experiment of a popup answer.
func experimentOf(t *testing.T, a apitest.Answer) map[string]any {
	t.Helper()
	e, ok := a.Body["experiment"].(map[string]any)
	require.True(t, ok, "no experiment in %s", a.Raw)
	return e
}
