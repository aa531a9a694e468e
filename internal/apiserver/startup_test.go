package apiserver_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver"
	"popupsvc/internal/config"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// These tests start popup-api while a dependency is down (a fault proxy in front of the real
// server refuses it), then bring the dependency up: the server must start, answer as the
// readiness rule says, and heal without a restart.

// proxied puts a fault proxy in front of cfg's MySQL and one in front of its Redis.
func proxied(t *testing.T, cfg *config.Config) (mysqlProxy, redisProxy *testenv.Proxy) {
	t.Helper()
	testenv.SingleNodeRedis(t) // the fault proxy stands in front of one node
	dsn, err := mysql.ParseDSN(cfg.MySQLDSN)
	require.NoError(t, err)
	mysqlProxy = testenv.NewProxy(t, dsn.Addr)
	dsn.Addr = mysqlProxy.Addr()
	cfg.MySQLDSN = dsn.FormatDSN()
	redisProxy = testenv.NewProxy(t, cfg.RedisAddr)
	cfg.RedisAddr = redisProxy.Addr()
	return mysqlProxy, redisProxy
}

// startBound starts popup-api and returns once its listeners are bound, ready or not.
func startBound(t *testing.T, cfg config.Config) *instance {
	t.Helper()
	return launch(t, cfg, nil, false)
}

// status answers method path on the public listener: status code and body length.
func (in *instance) status(t *testing.T, method, path string) (int, int) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+in.public+path, nil)
	require.NoError(t, err)
	res, err := in.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, len(body)
}

// requireAlive fails the test if popup-api has exited.
func (in *instance) requireAlive(t *testing.T) {
	t.Helper()
	in.RequireAlive(t)
}

// knownUser caches an empty user state in Redis, as a user who opened the app before has: with
// MySQL down, a user Redis does not know cannot be answered (its state would load from MySQL).
func knownUser(t *testing.T, cfg config.Config, uid string) {
	t.Helper()
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	raw := redisstore.AppendState(nil, &popup.UserState{})
	require.NoError(t, testenv.Redis(t).Set(context.Background(), keys.User(uid), raw, time.Hour).Err())
}

func TestStartsWithMySQLDownServesFromTheRedisCacheAndHeals(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	// An earlier instance filled the config cache, then MySQL went away.
	seeder := start(t, cfg, nil)
	id := seeder.createPopup(t, popupSpec("cached", nil))
	mysqlProxy, _ := proxied(t, &cfg)
	mysqlProxy.SetDown(true)
	knownUser(t, cfg, "known")

	api := start(t, cfg, nil) // start waits for readiness

	got, res := api.get(t, "uid=known&platform=ios&app_version=1")
	assert.Equal(t, id, got, "the popup comes from the Redis config cache: %s", res.Raw)
	code, _ := api.status(t, http.MethodGet, "/readyz")
	assert.Equal(t, http.StatusOK, code)
	res = api.adminDo(t, http.MethodPost, "/admin/v1/popups", popupSpec("while-down", nil))
	assert.Equal(t, http.StatusServiceUnavailable, res.Status, res.Raw)
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	assert.Equal(t, "mysql_unavailable", res.Body["error"].(map[string]any)["code"], res.Raw)
	res = api.adminDo(t, http.MethodGet, "/admin/v1/popups", nil)
	assert.Equal(t, http.StatusServiceUnavailable, res.Status, res.Raw)
	metrics := api.Metrics(t)
	assert.Contains(t, metrics, `popup_dependency_up{dependency="mysql"} 0`)
	assert.Contains(t, metrics, `popup_dependency_up{dependency="redis"} 1`)

	mysqlProxy.SetDown(false)
	require.Eventually(t, func() bool {
		return api.adminDo(t, http.MethodPost, "/admin/v1/popups", popupSpec("after", nil)).Status == http.StatusCreated
	}, 15*time.Second, 100*time.Millisecond, "admin writes work again once MySQL is back")
	assert.Contains(t, api.Metrics(t), `popup_dependency_up{dependency="mysql"} 1`)
	api.requireAlive(t)
}

func TestStartsWithRedisDownServesDegradedAndHeals(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	seeder := start(t, cfg, nil)
	id := seeder.createPopup(t, popupSpec("from-mysql", nil))
	_, redisProxy := proxied(t, &cfg)
	redisProxy.SetDown(true)

	api := start(t, cfg, nil) // ready: the snapshot came from MySQL

	res := api.do(t, http.MethodGet, "http://"+api.public+"/api/v1/popup?uid=u1&platform=ios&app_version=1", nil, nil)
	assert.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "1", res.Header.Get("X-Popup-Degraded"))
	assert.JSONEq(t, `{"popup":null}`, res.Raw)
	code, _ := api.status(t, http.MethodGet, "/readyz")
	assert.Equal(t, http.StatusOK, code, "readiness does not follow Redis once a snapshot is loaded")
	res = api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
	assert.Equal(t, http.StatusOK, res.Status, "MySQL-backed admin reads work: %s", res.Raw)

	redisProxy.SetDown(false)
	require.Eventually(t, func() bool {
		got, res := api.get(t, "uid=back"+itoa(time.Now().UnixNano())+"&platform=ios&app_version=1")
		return got == id && res.Header.Get("X-Popup-Degraded") == ""
	}, 15*time.Second, 100*time.Millisecond, "normal answers once Redis is back")
	api.requireAlive(t)
}

func TestStartsWithBothDownAndBecomesReadyWhenOneReturns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		back    string // the dependency that comes back
		wantPop bool   // a known user gets the popup once it is back
	}{
		{name: "mysql returns", back: "mysql"},
		{name: "redis returns", back: "redis", wantPop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			seeder := start(t, cfg, nil)
			id := seeder.createPopup(t, popupSpec("eventually", nil))
			mysqlProxy, redisProxy := proxied(t, &cfg)
			mysqlProxy.SetDown(true)
			redisProxy.SetDown(true)
			knownUser(t, cfg, "known")

			api := startBound(t, cfg)
			require.Eventually(t, func() bool { return mysqlProxy.Refused() >= 3 && redisProxy.Refused() >= 3 },
				15*time.Second, 10*time.Millisecond, "several retries of both")

			for _, method := range []string{http.MethodGet, http.MethodHead} {
				code, n := api.status(t, method, "/healthz")
				assert.Equal(t, http.StatusOK, code, method+" /healthz")
				assert.Equal(t, method == http.MethodGet, n > 0, method+" /healthz body")
				code, n = api.status(t, method, "/readyz")
				assert.Equal(t, http.StatusServiceUnavailable, code, method+" /readyz with no snapshot")
				assert.Equal(t, method == http.MethodGet, n > 0, method+" /readyz body")
			}
			api.requireAlive(t)

			map[string]*testenv.Proxy{"mysql": mysqlProxy, "redis": redisProxy}[tt.back].SetDown(false)
			require.Eventually(t, func() bool {
				code, _ := api.status(t, http.MethodHead, "/readyz")
				return code == http.StatusOK
			}, 15*time.Second, 100*time.Millisecond, "ready once %s is back", tt.back)
			got, res := api.get(t, "uid=known&platform=ios&app_version=1")
			assert.Equal(t, tt.wantPop, got == id, res.Raw)
		})
	}
}

func TestRefusesAnUnmigratedOrNewerSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		give    func(t *testing.T) string // the DSN
		wantErr string
	}{
		{name: "unmigrated", give: func(t *testing.T) string { return testenv.MySQLDSN(t, false) }, wantErr: "run `popup-worker migrate`"},
		{name: "newer", give: func(t *testing.T) string {
			dsn := testenv.MySQLDSN(t, true)
			db, err := mysqlstore.Open(context.Background(), dsn, 1)
			require.NoError(t, err)
			defer db.Close()
			_, err = db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, 1)")
			require.NoError(t, err)
			return dsn
		}, wantErr: "newer than this binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.MySQLDSN = tt.give(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			err := apiserver.Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), apiserver.Hooks{})

			require.ErrorIs(t, err, mysqlstore.ErrSchema)
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}
