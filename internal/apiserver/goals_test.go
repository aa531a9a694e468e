package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// conversion posts one conversion to the public listener, with no credential.
func (in *instance) conversion(t *testing.T, body any) response {
	t.Helper()
	return in.do(t, http.MethodPost, "http://"+in.public+"/api/v1/conversions", body, nil)
}

// ingestKey creates an ingest key through the admin API and returns its secret.
func (in *instance) ingestKey(t *testing.T) string {
	t.Helper()
	res := in.adminDo(t, http.MethodPost, "/admin/v1/ingest-keys", map[string]any{"name": "test backend"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	key, _ := res.Body["key"].(string)
	require.NotEmpty(t, key, res.Raw)
	return key
}

// conversionAs posts one conversion with ingest key key as its bearer token.
func (in *instance) conversionAs(t *testing.T, key string, body any) response {
	t.Helper()
	return in.do(t, http.MethodPost, "http://"+in.public+"/api/v1/conversions", body, keyed(key))
}

// keyed is the header of a request an ingest key vouches for.
func keyed(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// TestConversionsThroughTheService sends conversions to a real popup-api whose popup-worker
// attributes them (docs/CONTRACT.md §14): the refusals name the field and queue nothing, a retry
// of an event id is applied once (the worker logs what was queued), and a user exposed to an arm of a running experiment counts
// for it.
func TestConversionsThroughTheService(t *testing.T) {
	t.Parallel()
	cfg := privacyConfig(t)
	api := start(t, cfg, nil)
	startWorker(t, cfg)
	db := testDB(t, cfg)
	c := expClient{s: newSpecChecker(t, api.public, api.admin), adm: "http://" + api.admin}

	res := api.adminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "purchase", "name": "Purchase", "value": "sum"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := api.createPopup(t, popupSpec("conv-exp", map[string]any{"status": "active", "experiment": map[string]any{
		"primary_goal": "purchase",
		"variants":     []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}}))
	res = api.adminDo(t, http.MethodPost, "/admin/v1/popups/"+itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	eventually(t, 10*time.Second, "the experiment is served", func() bool {
		got, res := api.get(t, "uid=buyer&platform=ios&app_version=1.0.0")
		return got == id && res.Body["variant"] != nil
	})
	key := api.ingestKey(t)

	t.Run("bad conversions are 400s naming the field, queueing nothing", func(t *testing.T) {
		long := time.Now().Add(-8 * 24 * time.Hour).UTC().Format(time.RFC3339)
		tests := []struct {
			give  any
			field string
		}{
			{map[string]any{"uid": "buyer", "goal": "refund", "event_id": "e1"}, "goal"},
			{map[string]any{"uid": "buyer", "goal": "Purchase", "event_id": "e1"}, "goal"},
			{map[string]any{"uid": "buyer", "goal": "purchase"}, "event_id"},
			{map[string]any{"uid": "", "goal": "purchase", "event_id": "e1"}, "uid"},
			{map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "e1", "at": long}, "at"},
			{map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "e1", "at": "yesterday"}, "at"},
			{map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "e1", "value": 2e12}, "value"},
			{map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "e1", "value": "9.99"}, "value"},
			{map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "e1", "colour": "red"}, ""},
		}
		for _, tt := range tests {
			res := api.conversion(t, tt.give)
			require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
			if tt.field != "" {
				_, field := errorOf(t, res)
				assert.Equal(t, tt.field, field, "%v", tt.give)
			}
		}
		batch := func(goal3, goal4 string) map[string]any {
			var cs []map[string]any
			for i, g := range []string{"purchase", "purchase", "purchase", goal3, goal4} {
				cs = append(cs, map[string]any{"uid": "b" + itoa(int64(i)), "goal": g, "event_id": "x" + itoa(int64(i))})
			}
			return map[string]any{"conversions": cs}
		}
		res := api.do(t, http.MethodPost, "http://"+api.public+"/api/v1/conversions/batch", batch("BAD", "purchase"), nil)
		require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
		_, field := errorOf(t, res)
		assert.Equal(t, "conversions[3].goal", field)
		res = api.do(t, http.MethodPost, "http://"+api.public+"/api/v1/conversions/batch", batch("purchase", "nope"), nil)
		require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
		code, field := errorOf(t, res)
		assert.Equal(t, "unknown_goal", code)
		assert.Equal(t, "conversions[4].goal", field)
		res = api.do(t, http.MethodPost, "http://"+api.public+"/api/v1/conversions/batch", map[string]any{"conversions": []any{}}, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	})

	t.Run("a bad batch names every bad conversion by index and field, nothing queued", func(t *testing.T) {
		batchURL := "http://" + api.public + "/api/v1/conversions/batch"
		fieldsOf := func(res response) []string {
			t.Helper()
			var out []string
			for _, f := range res.Body["error"].(map[string]any)["fields"].([]any) {
				out = append(out, f.(map[string]any)["field"].(string))
			}
			return out
		}
		res := api.do(t, http.MethodPost, batchURL, `{"conversions":[
			{"uid":"b0","goal":"purchase","event_id":"m0","value":"9.99"},
			{"uid":"b1","goal":"purchase","event_id":"m1","colour":"red"},
			{"uid":"b2","goal":"purchase"},
			{"uid":"b3","goal":"purchase","event_id":"m3"},
			"not a conversion",
			{"uid":7,"goal":"purchase","event_id":"m5"}]}`, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
		code, _ := errorOf(t, res)
		assert.Equal(t, "validation_failed", code)
		assert.Equal(t, []string{"conversions[0].value", "conversions[1].colour", "conversions[2].event_id", "conversions[4]", "conversions[5].uid"}, fieldsOf(res),
			"type errors and unknown fields too, each named once, in order")

		res = api.do(t, http.MethodPost, batchURL, map[string]any{"conversions": []map[string]any{
			{"uid": "b0", "goal": "nope", "event_id": "g0"}, {"uid": "b1", "goal": "purchase", "event_id": "g1"}, {"uid": "b2", "goal": "nope2", "event_id": "g2"}}}, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
		code, _ = errorOf(t, res)
		assert.Equal(t, "unknown_goal", code)
		assert.Equal(t, []string{"conversions[0].goal", "conversions[2].goal"}, fieldsOf(res), "every unknown goal at once")

		many := make([]map[string]any, 150)
		for i := range many {
			many[i] = map[string]any{"uid": "b", "goal": "purchase", "event_id": "bad id " + itoa(int64(i))}
		}
		res = api.do(t, http.MethodPost, batchURL, map[string]any{"conversions": many}, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
		assert.Len(t, fieldsOf(res), 100, "at most 100 problems listed")
		assert.Contains(t, res.Body["error"].(map[string]any)["message"], "150 problem(s)")
		assert.Zero(t, count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid LIKE 'b%'`), "nothing of a refused batch is queued")
	})

	t.Run("a value needs an active ingest key; the routes take only JSON", func(t *testing.T) {
		batchURL := "http://" + api.public + "/api/v1/conversions/batch"
		valued := map[string]any{"uid": "forger", "goal": "purchase", "event_id": "forged-1", "value": 1e12}
		res := api.conversion(t, valued)
		require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
		code, field := errorOf(t, res)
		assert.Equal(t, "ingest_key_required", code)
		assert.Equal(t, "value", field)
		assert.Contains(t, res.Header.Get("WWW-Authenticate"), "Bearer")
		res = api.do(t, http.MethodPost, batchURL, map[string]any{"conversions": []map[string]any{
			{"uid": "forger", "goal": "purchase", "event_id": "forged-2"}, valued}}, nil)
		require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
		_, field = errorOf(t, res)
		assert.Equal(t, "conversions[1].value", field)
		res = api.conversionAs(t, "pik_"+strings.Repeat("0", 64), valued)
		require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
		code, _ = errorOf(t, res)
		assert.Equal(t, "invalid_ingest_key", code)

		// a key an admin revoked vouches for nothing from then on
		revoked := api.ingestKey(t)
		list := c.do(t, "GET", "/admin/v1/ingest-keys", "", nil, http.StatusOK)
		var keyID float64
		for _, k := range list.body["ingest_keys"].([]any) {
			k := k.(map[string]any)
			assert.Nil(t, k["key"], "a list never holds a secret")
			if strings.HasPrefix(revoked, k["prefix"].(string)) {
				keyID = k["id"].(float64)
			}
		}
		require.NotZero(t, keyID)
		gone := c.do(t, "DELETE", "/admin/v1/ingest-keys/"+itoa(int64(keyID)), "", nil, http.StatusOK)
		assert.Equal(t, "admin", gone.body["revoked_by"])
		res = api.conversionAs(t, revoked, valued)
		require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)

		// only JSON: a text/plain body (which a browser sends without a preflight) is a 415
		for _, url := range []string{"http://" + api.public + "/api/v1/conversions", batchURL} {
			res = api.do(t, http.MethodPost, url, `{"uid":"forger","goal":"purchase","event_id":"plain-1"}`, map[string]string{"Content-Type": "text/plain"})
			require.Equal(t, http.StatusUnsupportedMediaType, res.Status, res.Raw)
			code, _ = errorOf(t, res)
			assert.Equal(t, "unsupported_media_type", code)
		}
		// a conversion without a value stays open to the app
		res = api.conversion(t, map[string]any{"uid": "forger", "goal": "purchase", "event_id": "open-1"})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	})

	t.Run("a conversion is queued once and counts for the buyer's arm", func(t *testing.T) {
		for range 3 {
			res := api.conversionAs(t, key, map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "order-1", "value": 19.5})
			require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
		}
		res := api.do(t, http.MethodPost, "http://"+api.public+"/api/v1/conversions/batch", map[string]any{"conversions": []map[string]any{
			{"uid": "buyer", "goal": "purchase", "event_id": "order-1", "value": 19.5}, // the same conversion again
			{"uid": "buyer", "goal": "purchase", "event_id": "order-2", "value": 0.5},
			{"uid": "stranger", "goal": "purchase", "event_id": "order-1", "value": 100}, // never exposed
		}}, keyed(key))
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
		var users, convs int64
		var value float64
		var logged int
		// The buyer's and the stranger's conversions may sit on different queue shards, drained
		// in batches of their own: wait for both.
		eventually(t, 15*time.Second, "the worker logs and attributes the conversions", func() bool {
			err := db.QueryRowContext(context.Background(), `SELECT COALESCE(SUM(converted_users),0), COALESCE(SUM(conversions),0), COALESCE(SUM(value_sum),0)
				FROM popup_experiment_goal WHERE popup_id = ?`, id).Scan(&users, &convs, &value)
			require.NoError(t, err)
			require.NoError(t, db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM popup_conversion_log WHERE uid <> 'forger'`).Scan(&logged))
			return convs >= 2 && logged >= 3
		})
		assert.EqualValues(t, 1, users)
		assert.EqualValues(t, 2, convs)
		assert.InDelta(t, 20.0, value, 1e-9)
		assert.Equal(t, 3, logged, "the buyer's two orders and the stranger's: nothing of the refused requests (refused with a 400, never queued)")

		// The results show it on the buyer's arm, checked against api/openapi.yaml.
		r := c.do(t, "GET", "/admin/v1/popups/"+itoa(id)+"/experiment/results", "", nil, http.StatusOK)
		assert.Equal(t, "purchase", r.body["primary_goal"])
		assert.Equal(t, "a", r.body["goal_baseline"])
		var converted, sum float64
		for _, arm := range r.body["arms"].([]any) {
			goals := arm.(map[string]any)["goals"].([]any)
			require.Len(t, goals, 1)
			g := goals[0].(map[string]any)
			assert.Equal(t, "purchase", g["goal"])
			converted += g["converted_users"].(float64)
			sum += g["value_sum"].(float64)
		}
		assert.Equal(t, 1.0, converted)
		assert.InDelta(t, 20.0, sum, 1e-9)
	})

	t.Run("the console's results page shows the goal and that it decides", func(t *testing.T) {
		b := newBrowser(t, api)
		b.signIn()
		b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + itoa(id) + "/experiment"))
		b.waitFor(`document.querySelector('#goal-table-purchase')`)
		assert.Contains(t, b.text("#goals-primary"), "decided on goal purchase")
		var rows int
		b.eval(`document.querySelectorAll('#goal-table-purchase tbody tr').length`, &rows)
		assert.Equal(t, 2, rows, "one row per arm")
		var converted []string
		b.eval(`[...document.querySelectorAll('#goal-table-purchase tbody tr')].map(r => r.cells[2].textContent)`, &converted)
		assert.ElementsMatch(t, []string{"0", "1"}, converted, "the buyer converted in one arm")
		b.axeCheck("experiment results with a goal")
	})

	t.Run("the buyer's export lists the conversions, the erasure removes them", func(t *testing.T) {
		x := c.do(t, "GET", "/admin/v1/users/buyer/export", "", nil, http.StatusOK)
		require.Len(t, x.body["conversions"], 2)
		first := x.body["conversions"].([]any)[0].(map[string]any)
		assert.Equal(t, "purchase", first["goal"])
		api.erase(t, "buyer")
		for _, table := range []string{"popup_conversion_log", "popup_experiment_goal_user"} {
			var n int
			require.NoError(t, db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM `+table+` WHERE uid = 'buyer'`).Scan(&n))
			assert.Zero(t, n, table)
		}
		res := api.conversionAs(t, key, map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "order-1", "value": 19.5})
		require.Equal(t, http.StatusAccepted, res.Status, "a retry after the erasure is acknowledged as a duplicate, and not queued")
		// A new conversion of the (new) user, queued after the retry on the same shard: once the
		// worker has written it, it is the only one.
		res = api.conversion(t, map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "order-3"})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
		eventually(t, 15*time.Second, "the new conversion is written", func() bool {
			x = c.do(t, "GET", "/admin/v1/users/buyer/export", "", nil, http.StatusOK)
			return len(x.body["conversions"].([]any)) > 0
		})
		require.Len(t, x.body["conversions"], 1)
		assert.Equal(t, "order-3", x.body["conversions"].([]any)[0].(map[string]any)["event_id"])
	})
}

// TestABatchRefusesOnlyTheConversionsOfARateLimitedUID: a uid over POPUP_ACTION_RATE_LIMIT
// refuses its own conversions of a batch, named by index in a 429 with Retry-After; every other
// conversion of the batch is queued and written (docs/CONTRACT.md §14).
func TestABatchRefusesOnlyTheConversionsOfARateLimitedUID(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ActionRateLimit = 2
	api := start(t, cfg, nil)
	startWorker(t, cfg)
	db := testDB(t, cfg)
	res := api.adminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "signup", "name": "Sign-up"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	eventually(t, 10*time.Second, "the goal is accepted", func() bool {
		return api.conversion(t, map[string]any{"uid": "probe", "goal": "signup", "event_id": "probe"}).Status == http.StatusAccepted
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
		return count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid LIKE 'cold-%'`) == 2 &&
			count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid = 'hot'`) == 2
	})
	assert.Equal(t, 2, count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid = 'hot' AND event_id IN ('e0', 'e2')`))
}
