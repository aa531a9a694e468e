package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

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

// TestConversionsThroughTheService sends conversions to a real popup-api whose popup-worker
// attributes them (docs/CONTRACT.md §14): the refusals name the field and queue nothing, a retry
// of an event id is applied once (the worker logs what was queued), and a user exposed to an arm of a running experiment counts
// for it.
func TestConversionsThroughTheService(t *testing.T) {
	t.Parallel()
	cfg := apitest.PrivacyConfig(t)
	api := start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	db := apitest.DB(t, cfg)
	c := apitest.AdminClient{Spec: apitest.NewSpecChecker(t, api.public, api.admin), Base: "http://" + api.admin}

	res := api.adminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "purchase", "name": "Purchase", "value": "sum"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := api.createPopup(t, apitest.PopupSpec("conv-exp", map[string]any{"status": "active", "experiment": map[string]any{
		"primary_goal": "purchase",
		"variants":     []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}}))
	res = api.adminDo(t, http.MethodPost, "/admin/v1/popups/"+itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	eventually(t, 10*time.Second, "the experiment is served", func() bool {
		got, res := api.get(t, "uid=buyer&platform=ios&app_version=1.0.0")
		return got == id && res.Body["variant"] != nil
	})
	key := api.IngestKey(t)

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
			res := api.Conversion(t, tt.give)
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
		assert.Zero(t, apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid LIKE 'b%'`), "nothing of a refused batch is queued")
	})

	t.Run("a value needs an active ingest key; the routes take only JSON", func(t *testing.T) {
		batchURL := "http://" + api.public + "/api/v1/conversions/batch"
		valued := map[string]any{"uid": "forger", "goal": "purchase", "event_id": "forged-1", "value": 1e12}
		res := api.Conversion(t, valued)
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
		res = api.ConversionAs(t, "pik_"+strings.Repeat("0", 64), valued)
		require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
		code, _ = errorOf(t, res)
		assert.Equal(t, "invalid_ingest_key", code)

		// a key an admin revoked vouches for nothing from then on
		revoked := api.IngestKey(t)
		list := c.Do(t, "GET", "/admin/v1/ingest-keys", "", nil, http.StatusOK)
		var keyID float64
		for _, k := range list.Body["ingest_keys"].([]any) {
			k := k.(map[string]any)
			assert.Nil(t, k["key"], "a list never holds a secret")
			if strings.HasPrefix(revoked, k["prefix"].(string)) {
				keyID = k["id"].(float64)
			}
		}
		require.NotZero(t, keyID)
		gone := c.Do(t, "DELETE", "/admin/v1/ingest-keys/"+itoa(int64(keyID)), "", nil, http.StatusOK)
		assert.Equal(t, "admin", gone.Body["revoked_by"])
		res = api.ConversionAs(t, revoked, valued)
		require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)

		// only JSON: a text/plain body (which a browser sends without a preflight) is a 415
		for _, url := range []string{"http://" + api.public + "/api/v1/conversions", batchURL} {
			res = api.do(t, http.MethodPost, url, `{"uid":"forger","goal":"purchase","event_id":"plain-1"}`, map[string]string{"Content-Type": "text/plain"})
			require.Equal(t, http.StatusUnsupportedMediaType, res.Status, res.Raw)
			code, _ = errorOf(t, res)
			assert.Equal(t, "unsupported_media_type", code)
		}
		// a conversion without a value stays open to the app
		res = api.Conversion(t, map[string]any{"uid": "forger", "goal": "purchase", "event_id": "open-1"})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	})

	t.Run("a conversion is queued once and counts for the buyer's arm", func(t *testing.T) {
		for range 3 {
			res := api.ConversionAs(t, key, map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "order-1", "value": 19.5})
			require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
		}
		res := api.do(t, http.MethodPost, "http://"+api.public+"/api/v1/conversions/batch", map[string]any{"conversions": []map[string]any{
			{"uid": "buyer", "goal": "purchase", "event_id": "order-1", "value": 19.5}, // the same conversion again
			{"uid": "buyer", "goal": "purchase", "event_id": "order-2", "value": 0.5},
			{"uid": "stranger", "goal": "purchase", "event_id": "order-1", "value": 100}, // never exposed
		}}, apitest.Keyed(key))
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
		r := c.Do(t, "GET", "/admin/v1/popups/"+itoa(id)+"/experiment/results", "", nil, http.StatusOK)
		assert.Equal(t, "purchase", r.Body["primary_goal"])
		assert.Equal(t, "a", r.Body["goal_baseline"])
		var converted, sum float64
		for _, arm := range r.Body["arms"].([]any) {
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

	t.Run("the buyer's export lists the conversions, the erasure removes them", func(t *testing.T) {
		x := c.Do(t, "GET", "/admin/v1/users/buyer/export", "", nil, http.StatusOK)
		require.Len(t, x.Body["conversions"], 2)
		first := x.Body["conversions"].([]any)[0].(map[string]any)
		assert.Equal(t, "purchase", first["goal"])
		api.Erase(t, "buyer")
		for _, table := range []string{"popup_conversion_log", "popup_experiment_goal_user"} {
			var n int
			require.NoError(t, db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM `+table+` WHERE uid = 'buyer'`).Scan(&n))
			assert.Zero(t, n, table)
		}
		res := api.ConversionAs(t, key, map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "order-1", "value": 19.5})
		require.Equal(t, http.StatusAccepted, res.Status, "a retry after the erasure is acknowledged as a duplicate, and not queued")
		// A new conversion of the (new) user, queued after the retry on the same shard: once the
		// worker has written it, it is the only one.
		res = api.Conversion(t, map[string]any{"uid": "buyer", "goal": "purchase", "event_id": "order-3"})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
		eventually(t, 15*time.Second, "the new conversion is written", func() bool {
			x = c.Do(t, "GET", "/admin/v1/users/buyer/export", "", nil, http.StatusOK)
			return len(x.Body["conversions"].([]any)) > 0
		})
		require.Len(t, x.Body["conversions"], 1)
		assert.Equal(t, "order-3", x.Body["conversions"].([]any)[0].(map[string]any)["event_id"])
	})
}
