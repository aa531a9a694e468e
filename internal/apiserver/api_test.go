package apiserver_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

func TestChangePropagatesToAnotherInstanceWithin2s(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	cfg.ConfigPoll = 10 * time.Second // pub/sub must do it; the poll is only the safety net
	a := start(t, cfg, nil)
	b := start(t, cfg, nil)
	id := a.createPopup(t, popupSpec("propagated", nil))
	began := time.Now()
	deadline := began.Add(2 * time.Second)
	var got int64
	for i := 0; time.Now().Before(deadline) && got == 0; i++ {
		got, _ = b.get(t, "uid=p"+itoa(int64(i))+"&platform=web&app_version=1")
		if got == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	assert.Equal(t, id, got, "instance b serves the new popup within 2 s")
	t.Logf("propagated in %s", time.Since(began))

	// An edit and an archive propagate the same way.
	res := a.adminDo(t, http.MethodDelete, "/admin/v1/popups/"+itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "archived", res.Body["status"])
	deadline = time.Now().Add(2 * time.Second)
	for got != 0 && time.Now().Before(deadline) {
		got, _ = b.get(t, "uid=fresh"+itoa(time.Now().UnixNano())+"&platform=web&app_version=1")
	}
	assert.Zero(t, got, "the archived popup is gone from instance b")
	assert.Equal(t, http.StatusNotFound, b.action(t, id, map[string]any{"uid": "u1", "action": "click"}).Status)
}

func TestPollCatchesAChangeWithoutPubSub(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	cfg.ConfigPoll = 200 * time.Millisecond
	api := start(t, cfg, nil)
	// Write straight to MySQL and the cache, bypassing the announcement.
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	require.NoError(t, err)
	defer db.Close()
	id := api.createPopup(t, popupSpec("first", nil))
	_, err = db.ExecContext(ctx, "UPDATE popup_config SET priority = 99 WHERE id = ?", id)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "UPDATE popup_config_version SET version = version + 1")
	require.NoError(t, err)
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	require.NoError(t, rdb.Del(ctx, keys.ConfigVersion(), keys.ConfigBlob()).Err(), "an emptied cache is warmed again by the poll")
	require.Eventually(t, func() bool {
		res := api.adminDo(t, http.MethodGet, "/admin/v1/preview?uid=x&platform=web&app_version=1", nil)
		cands, _ := res.Body["candidates"].([]any)
		return len(cands) == 1 && cands[0].(map[string]any)["priority"].(float64) == 99
	}, 3*time.Second, 50*time.Millisecond)
}

func TestConcurrentRequestsOfOneUserGetThePopupOnce(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("once", nil))
	const n = 40
	var wg sync.WaitGroup
	results := make([]int64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], _ = api.get(t, "uid=racer&platform=ios&app_version=1")
		}(i)
	}
	wg.Wait()
	shown := 0
	for _, r := range results {
		if r == id {
			shown++
		}
	}
	assert.Equal(t, 1, shown, "exactly one of %d concurrent requests gets the popup", n)
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("target", nil))
	pub := "http://" + api.public
	tests := []struct {
		name     string
		method   string
		url      string
		body     any
		header   map[string]string
		wantCode int
		wantErr  string
	}{
		{"missing uid", "GET", pub + "/api/v1/popup?platform=ios&app_version=1", nil, nil, 400, "invalid_uid"},
		{"uid with a space", "GET", pub + "/api/v1/popup?uid=a%20b&platform=ios&app_version=1", nil, nil, 400, "invalid_uid"},
		{"uid too long", "GET", pub + "/api/v1/popup?uid=" + strings.Repeat("a", 65) + "&platform=ios&app_version=1", nil, nil, 400, "invalid_uid"},
		{"missing platform", "GET", pub + "/api/v1/popup?uid=u&app_version=1", nil, nil, 400, "invalid_platform"},
		{"unknown platform", "GET", pub + "/api/v1/popup?uid=u&platform=windows&app_version=1", nil, nil, 400, "invalid_platform"},
		{"missing app_version", "GET", pub + "/api/v1/popup?uid=u&platform=ios", nil, nil, 400, "invalid_app_version"},
		{"non-numeric app_version", "GET", pub + "/api/v1/popup?uid=u&platform=ios&app_version=8.x", nil, nil, 400, "invalid_app_version"},
		{"bad region", "GET", pub + "/api/v1/popup?uid=u&platform=ios&app_version=1&region=c%3Bn", nil, nil, 400, "invalid_region"},
		{"lang with a bad weight", "GET", pub + "/api/v1/popup?uid=u&platform=ios&app_version=1&lang=pt%3Bq%3D2", nil, nil, 400, "invalid_lang"},
		{"lang with a bracket", "GET", pub + "/api/v1/popup?uid=u&platform=ios&app_version=1&lang=%3Cpt%3E", nil, nil, 400, "invalid_lang"},
		{"body too large", "POST", pub + "/api/v1/popups/" + itoa(id) + "/actions", `{"uid":"u","action":"click","event_id":"` + strings.Repeat("a", 5000) + `"}`, nil, 413, "body_too_large"},
		{"bad JSON", "POST", pub + "/api/v1/popups/" + itoa(id) + "/actions", `{"uid":`, nil, 400, "invalid_json"},
		{"unknown action", "POST", pub + "/api/v1/popups/" + itoa(id) + "/actions", map[string]any{"uid": "u", "action": "like"}, nil, 400, "invalid_action"},
		{"action without uid", "POST", pub + "/api/v1/popups/" + itoa(id) + "/actions", map[string]any{"action": "click"}, nil, 400, "invalid_uid"},
		{"bad event_id", "POST", pub + "/api/v1/popups/" + itoa(id) + "/actions", map[string]any{"uid": "u", "action": "click", "event_id": "a b"}, nil, 400, "invalid_event_id"},
		{"unknown popup", "POST", pub + "/api/v1/popups/999999/actions", map[string]any{"uid": "u", "action": "click"}, nil, 404, "popup_not_found"},
		{"non-numeric popup id", "POST", pub + "/api/v1/popups/abc/actions", map[string]any{"uid": "u", "action": "click"}, nil, 400, "invalid_popup_id"},
		{"unknown route", "GET", pub + "/nope", nil, nil, 404, "not_found"},
		{"admin is not on the public listener", "GET", pub + "/admin/v1/popups", nil, map[string]string{"Authorization": "Bearer " + token}, 404, "not_found"},
		{"metrics are not on the public listener", "GET", pub + "/metrics", nil, nil, 404, "not_found"},
		{"pprof is not on the public listener", "GET", pub + "/debug/pprof/", nil, nil, 404, "not_found"},
		{"admin without token", "GET", "http://" + api.admin + "/admin/v1/popups", nil, nil, 401, "unauthorized"},
		{"admin with a wrong token", "GET", "http://" + api.admin + "/admin/v1/popups", nil, map[string]string{"Authorization": "Bearer nope"}, 401, "unauthorized"},
		{"metrics need the token", "GET", "http://" + api.admin + "/metrics", nil, nil, 401, "unauthorized"},
		{"admin validation names the field", "POST", "http://" + api.admin + "/admin/v1/popups", map[string]any{"name": "x", "targeting": map[string]any{"rollout_percent": 101}}, map[string]string{"Authorization": "Bearer " + token}, 400, "validation_failed"},
		{"admin unknown field", "POST", "http://" + api.admin + "/admin/v1/popups", map[string]any{"name": "x", "colour": "red"}, map[string]string{"Authorization": "Bearer " + token}, 400, "invalid_json"},
		{"admin unknown popup", "GET", "http://" + api.admin + "/admin/v1/popups/424242", nil, map[string]string{"Authorization": "Bearer " + token}, 404, "popup_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := api.do(t, tt.method, tt.url, tt.body, tt.header)
			assert.Equal(t, tt.wantCode, res.Status, res.Raw)
			errBody, _ := res.Body["error"].(map[string]any)
			require.NotNil(t, errBody, res.Raw)
			assert.Equal(t, tt.wantErr, errBody["code"])
			assert.NotEmpty(t, errBody["message"])
		})
	}
	res := api.do(t, "POST", "http://"+api.admin+"/admin/v1/popups", map[string]any{"name": "x", "targeting": map[string]any{"rollout_percent": 101}},
		map[string]string{"Authorization": "Bearer " + token})
	fields := res.Body["error"].(map[string]any)["fields"].([]any)
	assert.Equal(t, "targeting.rollout_percent", fields[0].(map[string]any)["field"])
}

func TestActionEventIDAppliedOnce(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	api := start(t, cfg, nil)
	id := api.createPopup(t, popupSpec("dedupe", nil))
	for i := 0; i < 3; i++ {
		res := api.action(t, id, map[string]any{"uid": "u9", "action": "click", "event_id": "client-key-1"})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	}
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	n, err := rdb.LLen(context.Background(), keys.Queue(keys.Shard("u9"))).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "three posts of one event_id queue one event")
	res := api.action(t, id, map[string]any{"uid": "u9", "action": "close"})
	require.Equal(t, http.StatusAccepted, res.Status)
	n, _ = rdb.LLen(context.Background(), keys.Queue(keys.Shard("u9"))).Result()
	assert.EqualValues(t, 2, n, "an action without event_id gets a generated one")
}

func TestUserStateComesBackFromMySQLAfterRedisLosesIt(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	clk := newClock()
	cfg := testConfig(t)
	api := start(t, cfg, clk)
	id := api.createPopup(t, popupSpec("durable", map[string]any{"reshow_after_seconds": 3600}))
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	require.NoError(t, err)
	defer db.Close()
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}

	// What the worker would have written for a user shown the popup a minute ago.
	_, err = db.ExecContext(ctx, `INSERT INTO popup_user_state (uid, popup_id, next_show_at, impressions, last_impression_at)
		VALUES ('old-user', ?, ?, 1, ?)`, id, clk.Now().Add(59*time.Minute), clk.Now().Add(-time.Minute))
	require.NoError(t, err)
	got, _ := api.get(t, "uid=old-user&platform=ios&app_version=1")
	assert.Zero(t, got, "the state is reloaded from MySQL: still hidden")
	raw, err := rdb.Get(ctx, keys.User("old-user")).Result()
	require.NoError(t, err)
	assert.Contains(t, raw, "|"+itoa(id)+",", "and cached in Redis")

	// A new user costs one MySQL read, then "no state" is cached.
	got, _ = api.get(t, "uid=new-user&platform=ios&app_version=1")
	assert.Equal(t, id, got)

	// Redis loses the state entirely (eviction, failover): the next request reloads it once.
	// (Another app version: the same query would be answered by the local answers, no Redis.)
	require.NoError(t, rdb.Del(ctx, keys.User("old-user")).Err())
	got, _ = api.get(t, "uid=old-user&platform=ios&app_version=2")
	assert.Zero(t, got)
	exists, err := rdb.Exists(ctx, keys.User("old-user")).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, exists)
}

func TestNewUserStateCachedAsEmpty(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	api := start(t, cfg, nil)
	api.createPopup(t, popupSpec("targeted", map[string]any{"targeting": map[string]any{"rollout_percent": 0}}))
	api.createPopup(t, popupSpec("open", map[string]any{"targeting": map[string]any{"platforms": []string{"android"}}}))
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	// Targeted at android: an iOS request matches nothing and touches no store at all.
	got, _ := api.get(t, "uid=ios-user&platform=ios&app_version=1")
	assert.Zero(t, got)
	n, _ := rdb.Exists(context.Background(), keys.User("ios-user")).Result()
	assert.Zero(t, n, "no candidate: no Redis round trip, nothing cached")
	// An android user is shown the popup; its state is written.
	got, _ = api.get(t, "uid=droid&platform=android&app_version=1")
	assert.NotZero(t, got)
	raw, err := rdb.Get(context.Background(), keys.User("droid")).Result()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(raw, "1|"), raw)
}

func TestRedisDownDegradesAndRecovers(t *testing.T) {
	t.Parallel()
	testenv.SingleNodeRedis(t) // the fault proxy stands in front of one node
	cfg := testConfig(t)
	tightBudgets(t, &cfg) // a 200 ms slow Redis must miss them
	proxy := testenv.NewProxy(t, cfg.RedisAddr)
	cfg.RedisAddr = proxy.Addr()
	api := start(t, cfg, nil)
	id := api.createPopup(t, popupSpec("resilient", nil))

	check := func(t *testing.T, what string) {
		t.Helper()
		for i := 0; i < 20; i++ {
			res := api.do(t, "GET", "http://"+api.public+"/api/v1/popup?uid=d"+itoa(int64(i))+"&platform=ios&app_version=1", nil, nil)
			require.Equal(t, http.StatusOK, res.Status, res.Raw)
			assert.Equal(t, "1", res.Header.Get("X-Popup-Degraded"), what)
			assert.Nil(t, res.Body["popup"])
		}
		res := api.action(t, id, map[string]any{"uid": "d1", "action": "click"})
		assert.Equal(t, http.StatusServiceUnavailable, res.Status, res.Raw)
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
	}

	t.Run("stopped", func(t *testing.T) {
		proxy.SetDown(true)
		check(t, "redis down")
	})
	t.Run("recovers without restart", func(t *testing.T) {
		proxy.SetDown(false)
		require.Eventually(t, func() bool {
			got, res := api.get(t, "uid=back"+itoa(time.Now().UnixNano())+"&platform=ios&app_version=1")
			return got == id && res.Header.Get("X-Popup-Degraded") == ""
		}, 5*time.Second, 50*time.Millisecond)
	})
	t.Run("slow", func(t *testing.T) {
		proxy.SetDelay(200 * time.Millisecond)
		check(t, "redis slow")
		proxy.SetDelay(0)
	})
	t.Run("recovers from slowness", func(t *testing.T) {
		require.Eventually(t, func() bool {
			got, _ := api.get(t, "uid=fast"+itoa(time.Now().UnixNano())+"&platform=ios&app_version=1")
			return got == id
		}, 5*time.Second, 50*time.Millisecond)
	})
}

func TestAdminPreviewStateAndCRUD(t *testing.T) {
	t.Parallel()
	clk := newClock()
	api := start(t, testConfig(t), clk)
	first := api.createPopup(t, popupSpec("first", map[string]any{"priority": 10, "click_cooldown_seconds": -1}))
	second := api.createPopup(t, popupSpec("second", map[string]any{"priority": 5, "targeting": map[string]any{"platforms": []string{"web"}}}))
	third := api.createPopup(t, popupSpec("third", map[string]any{"priority": 1}))

	res := api.adminDo(t, "GET", "/admin/v1/popups/"+itoa(first), nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.EqualValues(t, 86400, res.Body["reshow_after_seconds"], "defaults applied")
	assert.EqualValues(t, 86400, res.Body["close_cooldown_seconds"])
	assert.Equal(t, "active", res.Body["status"])

	got, _ := api.get(t, "uid=pv&platform=ios&app_version=1")
	require.Equal(t, first, got)
	require.Equal(t, http.StatusAccepted, api.action(t, first, map[string]any{"uid": "pv", "action": "click"}).Status)

	res = api.adminDo(t, "GET", "/admin/v1/preview?uid=pv&platform=ios&app_version=1", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	reasons := map[int64]string{}
	for _, c := range res.Body["candidates"].([]any) {
		m := c.(map[string]any)
		r, _ := m["reason"].(string)
		reasons[int64(m["id"].(float64))] = r
	}
	assert.Equal(t, map[int64]string{first: "click_cooldown", second: "platform", third: ""}, reasons)
	assert.Equal(t, float64(third), res.Body["popup"].(map[string]any)["id"])

	// Preview records nothing: the real request still gets the third popup.
	got, _ = api.get(t, "uid=pv&platform=ios&app_version=1")
	assert.Equal(t, third, got)

	res = api.adminDo(t, "GET", "/admin/v1/users/pv/state", nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Len(t, res.Body["popups"], 2)
	assert.EqualValues(t, 2, res.Body["impressions_today"])

	upd := popupSpec("third-renamed", map[string]any{"priority": 1})
	res = api.adminDo(t, "PUT", "/admin/v1/popups/"+itoa(third), upd)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "third-renamed", res.Body["name"])
	res = api.adminDo(t, "PUT", "/admin/v1/popups/9999", upd)
	assert.Equal(t, http.StatusNotFound, res.Status)

	res = api.adminDo(t, "GET", "/admin/v1/popups", nil)
	assert.Len(t, res.Body["popups"], 3)
	res = api.adminDo(t, "POST", "/admin/v1/cache/reload", nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.NotZero(t, res.Body["config_version"])
}

func TestMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	api.createPopup(t, popupSpec("m", nil))
	api.get(t, "uid=m1&platform=ios&app_version=1")
	req, _ := http.NewRequest("GET", "http://"+api.admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, name := range []string{"popup_http_request_duration_seconds_bucket", `popup_decisions_total{outcome="popup"}`, "popup_snapshot_version", "popup_snapshot_built_timestamp_seconds"} {
		assert.Contains(t, string(body), name)
	}
}

func TestRefusesToStart(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := testConfig(t)
	cfg.AdminToken = ""
	err := apiserver.Run(context.Background(), cfg, log, apiserver.Hooks{})
	assert.ErrorContains(t, err, "POPUP_ADMIN_TOKEN")

	cfg = testConfig(t)
	cfg.MySQLDSN = testenv.MySQLDSN(t, false)
	err = apiserver.Run(context.Background(), cfg, log, apiserver.Hooks{})
	assert.ErrorIs(t, err, mysqlstore.ErrSchema)
}

// TestConcurrentAdminWritesAreVisibleWhenTheyReturn: admin writes share config reloads
// (internal/coalesce), yet each write's popup must be served by the instance as soon as its
// request has returned, with no wait.
func TestConcurrentAdminWritesAreVisibleWhenTheyReturn(t *testing.T) {
	t.Parallel()
	a := start(t, testConfig(t), nil)
	const writers = 8
	type created struct {
		region string
		id     int64
	}
	got := make(chan created, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			region := "cw" + itoa(int64(w))
			spec := popupSpec("concurrent-"+region, map[string]any{"targeting": map[string]any{"regions": []string{region}}})
			res := a.adminDo(t, http.MethodPost, "/admin/v1/popups", spec)
			if !assert.Equal(t, http.StatusCreated, res.Status, res.Raw) {
				return
			}
			// At once, on the same instance: the reload that the write waited for included it.
			id, _ := a.get(t, "uid=cw-user-"+region+"&platform=web&app_version=1&region="+region)
			assert.Equal(t, int64(res.Body["id"].(float64)), id, "popup of region %s not served right after its write returned", region)
			got <- created{region, id}
		})
	}
	wg.Wait()
	close(got)
	n := 0
	for range got {
		n++
	}
	assert.Equal(t, writers, n)
}
