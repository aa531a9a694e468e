package status_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/testenv"
)

const privacyKey = "test-privacy-key-0123456789abcdef0123456789abcdef"

// section is one section of the status answer.
func section(t *testing.T, a apitest.Answer, name string) map[string]any {
	t.Helper()
	s, ok := a.Body[name].(map[string]any)
	require.True(t, ok, "no %s in %s", name, a.Raw)
	return s
}

// TestStatusShowsWhatTheAlertsWatch: GET /admin/v1/status reads the real stores of a running
// popup-api: the queue's backlog and its age, the pending erasures against their promise, the
// retention's days, the dependencies; a section turns warning past its alert's threshold, and so
// does the whole. Every answer is checked against api/openapi.yaml.
func TestStatusShowsWhatTheAlertsWatch(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.PrivacyKey = privacyKey
	clk := apitest.NewClock()
	clk.Advance(time.Since(clk.Now())) // today: the log's day partitions are made on MySQL's clock
	api := apitest.Start(t, cfg, clk)
	c := apitest.AdminClient{Spec: apitest.NewSpecChecker(t, api.Public, api.Admin), Base: "http://" + api.Admin}
	status := func() apitest.Answer {
		t.Helper()
		return c.Do(t, "GET", "/admin/v1/status", "", nil, http.StatusOK)
	}

	var got apitest.Answer
	apitest.Eventually(t, 10*time.Second, "both dependencies checked", func() bool {
		got = status()
		return section(t, got, "mysql")["state"] == "ok" && section(t, got, "redis")["state"] == "ok"
	})
	assert.Equal(t, "ok", got.Body["state"], got.Raw)
	assert.Equal(t, map[string]any{"state": "ok", "ready": true, "config_version": section(t, got, "instance")["config_version"]},
		section(t, got, "instance"))
	q := section(t, got, "queue")
	assert.Equal(t, []any{"ok", 0.0, 0.0, 0.0}, []any{q["state"], q["waiting"], q["dead_letters"], q["oldest_age_seconds"]})
	r := section(t, got, "retention")
	assert.Equal(t, "ok", r["state"], got.Raw)
	assert.Equal(t, float64(cfg.ActionLogRetention/(24*time.Hour)), r["keep_days"])
	assert.Equal(t, clk.Now().UTC().Format(time.DateOnly), r["oldest_day"], "a new log keeps today only")
	assert.Equal(t, 1.0, r["days_kept"])
	assert.Equal(t, false, r["overdue"])
	e := section(t, got, "erasures")
	assert.Equal(t, []any{"ok", 0.0, 60.0}, []any{e["state"], e["pending"], e["promise_seconds"]})
	assert.Equal(t, "ok", section(t, got, "audiences")["state"])
	if !testenv.RedisCluster(t) {
		assert.Equal(t, "off", section(t, got, "redis_cluster")["state"], "a single Redis is not a cluster")
	}

	// An action queues an event no worker drains (none runs here); an erasure waits for one.
	id := api.CreatePopup(t, apitest.PopupSpec("status", nil))
	res := api.Action(t, id, map[string]any{"uid": "status-1", "action": "close"})
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	res = api.AdminDo(t, http.MethodDelete, "/admin/v1/users/status-2", nil)
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	got = status()
	q, e = section(t, got, "queue"), section(t, got, "erasures")
	assert.Equal(t, "ok", q["state"], "a fresh backlog: %s", got.Raw)
	assert.GreaterOrEqual(t, q["waiting"], 1.0)
	assert.Equal(t, []any{"ok", 1.0, false}, []any{e["state"], e["pending"], e["overdue"]}, got.Raw)

	clk.Advance(3 * time.Minute) // past the backlog's two minutes and the erasure's promise
	got = status()
	assert.Equal(t, "warning", got.Body["state"], got.Raw)
	q, e = section(t, got, "queue"), section(t, got, "erasures")
	assert.Equal(t, "warning", q["state"], got.Raw)
	assert.GreaterOrEqual(t, q["oldest_age_seconds"], 180.0)
	assert.Equal(t, []any{"warning", 1.0, true}, []any{e["state"], e["pending"], e["overdue"]}, got.Raw)
	assert.GreaterOrEqual(t, e["oldest_age_seconds"], 180.0)
	assert.Equal(t, "ok", section(t, got, "retention")["state"], "the retention does not follow the queue")
}

// TestStatusAnswersWithMySQLOrRedisDownOrHanging: with MySQL, then Redis, refusing connections,
// and then both holding every answer back, GET /admin/v1/status still answers 200 in bounded
// time, as api/openapi.yaml says, the sections that read the missing store saying so.
func TestStatusAnswersWithMySQLOrRedisDownOrHanging(t *testing.T) {
	t.Parallel()
	testenv.SingleNodeRedis(t) // the fault proxy stands in front of one node
	cfg := apitest.Config(t)
	dsn, err := mysql.ParseDSN(cfg.MySQLDSN)
	require.NoError(t, err)
	mysqlProxy := testenv.NewProxy(t, dsn.Addr)
	dsn.Addr = mysqlProxy.Addr()
	cfg.MySQLDSN = dsn.FormatDSN()
	redisProxy := testenv.NewProxy(t, cfg.RedisAddr)
	cfg.RedisAddr = redisProxy.Addr()
	api := apitest.Start(t, cfg, nil)
	c := apitest.AdminClient{Spec: apitest.NewSpecChecker(t, api.Public, api.Admin), Base: "http://" + api.Admin}
	status := func() apitest.Answer {
		t.Helper()
		return c.Do(t, "GET", "/admin/v1/status", "", nil, http.StatusOK)
	}
	state := func(a apitest.Answer, name string) any { return section(t, a, name)["state"] }
	apitest.Eventually(t, 10*time.Second, "all ok", func() bool { return status().Body["state"] == "ok" })

	mysqlProxy.SetDown(true)
	got := status()
	assert.Equal(t, "warning", got.Body["state"], got.Raw)
	for _, name := range []string{"retention", "erasures"} {
		assert.Contains(t, []any{"down", "unavailable"}, state(got, name), "%s reads MySQL: %s", name, got.Raw)
	}
	assert.Equal(t, "ok", state(got, "queue"), "the queue is in Redis: %s", got.Raw)
	apitest.Eventually(t, 10*time.Second, "MySQL seen down", func() bool {
		got = status()
		return state(got, "mysql") == "down" && state(got, "erasures") == "down"
	})
	mysqlProxy.SetDown(false)
	apitest.Eventually(t, 15*time.Second, "all ok again", func() bool { return status().Body["state"] == "ok" })

	redisProxy.SetDown(true)
	got = status()
	assert.Contains(t, []any{"down", "unavailable"}, state(got, "queue"), got.Raw)
	assert.Equal(t, "ok", state(got, "erasures"), "the erasures are in MySQL: %s", got.Raw)
	apitest.Eventually(t, 10*time.Second, "Redis seen down", func() bool {
		got = status()
		return state(got, "redis") == "down" && state(got, "queue") == "down"
	})
	redisProxy.SetDown(false)
	apitest.Eventually(t, 15*time.Second, "all ok again", func() bool { return status().Body["state"] == "ok" })

	// Both hold every answer back: the status does not wait for them (the checker's client gives
	// up after 10 s; the status's own limit is 2 s).
	mysqlProxy.SetDelay(time.Minute)
	redisProxy.SetDelay(time.Minute)
	got = status()
	mysqlProxy.SetDelay(0)
	redisProxy.SetDelay(0)
	assert.Equal(t, "warning", got.Body["state"], got.Raw)
	for _, name := range []string{"queue", "retention", "erasures"} {
		assert.Contains(t, []any{"down", "unavailable"}, state(got, name), "%s: %s", name, got.Raw)
	}
}
