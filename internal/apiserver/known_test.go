package apiserver_test

import (
	"context"
	"database/sql"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// TestKnownUsersKeepMySQLOffTheFirstVisit: with the known-users filter complete, a first visit
// is answered without MySQL (the proof: MySQL unreachable for popup-api, and new users still get
// their popup); a user with durable state whose Redis state is lost still pays the MySQL load
// and keeps a click's cooldown; after Redis loses the filter itself (every key of the service
// deleted, as a flush would), nothing trusts it until the worker has rebuilt it from MySQL.
func TestKnownUsersKeepMySQLOffTheFirstVisit(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	cfg.KnownUsers = 100_000
	cfg.WarmInterval = 200 * time.Millisecond // the worker checks the filters this often
	apitest.StartWorker(t, cfg)

	// popup-api reaches MySQL through a proxy the test can take down; the worker does not.
	apiCfg := cfg
	dsn, err := mysql.ParseDSN(cfg.MySQLDSN)
	require.NoError(t, err)
	mysqlProxy := testenv.NewProxy(t, dsn.Addr)
	dsn.Addr = mysqlProxy.Addr()
	apiCfg.MySQLDSN = dsn.FormatDSN()
	api := start(t, apiCfg, nil)
	id := api.createPopup(t, popupSpec("welcome", map[string]any{"click_cooldown_seconds": -1}))

	ctx := context.Background()
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	filter, err := redisstore.NewKnownUsers(keys, cfg.KnownUsers, cfg.KnownUsersFP)
	require.NoError(t, err)
	complete := func() bool { // every shard's filter (16 on a Cluster)
		for shard := range keys.Shards {
			ok, err := filter.Complete(ctx, rdb, shard)
			require.NoError(t, err)
			if !ok {
				return false
			}
		}
		return true
	}
	require.Eventually(t, complete, 15*time.Second, 50*time.Millisecond, "the worker builds the filter")
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	require.NoError(t, err)
	defer db.Close()

	// A user sees the popup, clicks it (never again), and the worker writes that to MySQL.
	got, _ := api.get(t, "uid=clicker&platform=ios&app_version=1")
	require.Equal(t, id, got)
	res := api.action(t, id, map[string]any{"uid": "clicker", "action": "click"})
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	require.Eventually(t, func() bool { return clickedInMySQL(t, db, "clicker") }, 15*time.Second, 50*time.Millisecond)
	forget := func() { require.NoError(t, rdb.Del(ctx, keys.User("clicker")).Err()) }

	// Each GET below uses a new app version: the same query would be answered by the local
	// answers (no Redis, no MySQL) and prove nothing.
	version := 10
	getClicker := func() response {
		version++
		_, res := api.get(t, "uid=clicker&platform=ios&app_version="+itoa(int64(version)))
		return res
	}

	forget()
	res = getClicker()
	assert.Empty(t, res.Header.Get("X-Popup-Degraded"))
	assert.Nil(t, res.Body["popup"], "its state came back from MySQL: the click still hides the popup")

	mysqlProxy.SetDown(true)
	for i := range 20 {
		got, res := api.get(t, "uid=newcomer-"+itoa(int64(i))+"&platform=ios&app_version=1")
		assert.Equal(t, id, got, "a new user gets the popup with MySQL unreachable")
		assert.Empty(t, res.Header.Get("X-Popup-Degraded"))
	}
	forget()
	res = getClicker()
	assert.Equal(t, "1", res.Header.Get("X-Popup-Degraded"), "a known user's lost state needs MySQL: degraded, never treated as new")
	assert.Nil(t, res.Body["popup"])
	mysqlProxy.SetDown(false)

	// Redis loses everything of the service (a FLUSHALL of our keys, the test Redis is shared).
	// The worker may rebuild the filter (one uid) before the GET arrives; then the GET proves
	// nothing about an untrusted filter, and the loss is made again (a bounded number of times).
	untrusted := func() bool {
		return regexp.MustCompile(`popup_user_state_misses_total\{answer="untrusted"\} [1-9]`).MatchString(api.Metrics(t))
	}
	for try := 0; try < 10; try++ {
		all, err := testenv.RedisKeys(ctx, rdb, cfg.RedisPrefix+"*")
		require.NoError(t, err)
		require.NotEmpty(t, all)
		for _, k := range all {
			require.NoError(t, rdb.Del(ctx, k).Err())
		}
		res = getClicker()
		assert.Empty(t, res.Header.Get("X-Popup-Degraded"))
		assert.Nil(t, res.Body["popup"], "an untrusted filter sends the miss to MySQL")
		if untrusted() {
			break
		}
	}
	require.Eventually(t, complete, 15*time.Second, 50*time.Millisecond, "the worker rebuilds the filter from MySQL")

	mysqlProxy.SetDown(true)
	got, res = api.get(t, "uid=after-rebuild&platform=ios&app_version=1")
	assert.Equal(t, id, got, "after the rebuild a new user costs no SQL again")
	assert.Empty(t, res.Header.Get("X-Popup-Degraded"))
	forget()
	res = getClicker()
	assert.Equal(t, "1", res.Header.Get("X-Popup-Degraded"), "the rebuilt filter knows the clicker")
	mysqlProxy.SetDown(false)

	m := api.Metrics(t)
	assert.Regexp(t, `popup_user_state_misses_total\{answer="new"\} [1-9]`, m)
	assert.Regexp(t, `popup_user_state_misses_total\{answer="maybe"\} [1-9]`, m)
	assert.Regexp(t, `popup_user_state_misses_total\{answer="untrusted"\} [1-9]`, m)
	assert.Contains(t, m, `popup_decisions_total{outcome="degraded_mysql"} 2`)
}

func clickedInMySQL(t *testing.T, db *sql.DB, uid string) bool {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_user_state WHERE uid = ? AND last_click_at > '1970-01-02'`, uid).Scan(&n))
	return n > 0
}
