// Package testenv gives integration tests a real MariaDB database and a real Redis namespace,
// both started by the test harness (scripts/test.sh, run by `make test`), never mocks and never
// the machine's default services. The Redis is a single node, or a Redis Cluster when
// POPUP_TEST_REDIS_ADDR holds several comma-separated seeds.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/config"
	"popupsvc/internal/mysqlstore"
)

// Env names the variables scripts/test.sh exports.
const (
	EnvMySQL = "POPUP_TEST_MYSQL_DSN"  // DSN of a user allowed to create databases, no database name
	EnvRedis = "POPUP_TEST_REDIS_ADDR" // host:port, or comma-separated seeds of a Redis Cluster
	// EnvStrict=1 (set by `make test`) turns every "cannot run here" skip into a failure, so
	// that the full suite never passes with a test left out.
	EnvStrict = "POPUP_TEST_STRICT"
	// EnvRedisFacingOnly=1 (the Redis Cluster pass of `make test`) runs only the storage tests
	// marked RedisFacing: the others do not depend on what kind of Redis serves them and have
	// passed against the single node already.
	EnvRedisFacingOnly = "POPUP_TEST_REDIS_FACING_ONLY"
)

// redisFacing holds the names of the top-level tests marked RedisFacing.
var redisFacing sync.Map

// RedisFacing marks a test whose outcome depends on how Redis is deployed (slots, pub/sub,
// scripts, the queue): the Redis Cluster pass runs it again.
func RedisFacing(t testing.TB) {
	t.Helper()
	redisFacing.Store(topName(t), true)
}

func topName(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

// selected skips a storage test that the current pass does not run (EnvRedisFacingOnly).
func selected(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvRedisFacingOnly) != "1" {
		return
	}
	if _, ok := redisFacing.Load(topName(t)); !ok {
		t.Skipf("%s=1: this pass runs only the tests marked testenv.RedisFacing", EnvRedisFacingOnly)
	}
}

func need(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		Missing(t, name+" is not set: storage tests run under `make test`, which starts their MariaDB and Redis")
	}
	return v
}

// Strict reports whether skips are failures (POPUP_TEST_STRICT=1, as under `make test`).
func Strict() bool { return os.Getenv(EnvStrict) == "1" }

// Missing ends a test that cannot run here because something it needs is absent: a skip that
// names what to provide for a quick `go test ./...`, a failure under `make test` (Strict).
func Missing(t testing.TB, why string) {
	t.Helper()
	if Strict() {
		t.Fatalf("%s (%s=1: nothing may be skipped)", why, EnvStrict)
	}
	t.Skip(why)
}

// Suffix returns a short random name part, unique per call.
func Suffix(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

// MySQLDSN creates a fresh database, optionally migrated, and returns a DSN for it; the database
// is dropped when the test ends.
func MySQLDSN(t testing.TB, migrate bool) string {
	t.Helper()
	selected(t)
	base := need(t, EnvMySQL)
	cfg, err := mysql.ParseDSN(base)
	require.NoError(t, err)
	name := "test_" + Suffix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := mysqlstore.Open(ctx, base, 2)
	require.NoError(t, err)
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
		admin.Close()
	})
	cfg.DBName = name
	dsn := cfg.FormatDSN()
	if migrate {
		db, err := mysqlstore.Open(ctx, dsn, 2)
		require.NoError(t, err)
		defer db.Close()
		_, err = mysqlstore.Migrate(ctx, db)
		require.NoError(t, err)
	}
	return dsn
}

// MySQL returns a connection to a fresh migrated database.
func MySQL(t testing.TB) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := mysqlstore.Open(ctx, MySQLDSN(t, true), 8)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// RedisAddr is the test Redis as POPUP_REDIS_ADDR takes it: one host:port, or the comma-separated
// seeds of a Redis Cluster (scripts/test.sh runs the Redis-facing packages a second time against
// a local three-master cluster this way).
func RedisAddr(t testing.TB) string {
	t.Helper()
	selected(t)
	return need(t, EnvRedis)
}

// RedisCluster reports whether the test Redis is a cluster: several addresses, the same rule as
// POPUP_REDIS_ADDR's.
func RedisCluster(t testing.TB) bool {
	t.Helper()
	return len(redisAddrs(t)) > 1
}

// SingleNodeRedis skips a test that needs one Redis node of its own (a fault proxy in front of
// it, say) when the test Redis is a cluster; the single-node pass of `make test` runs it.
func SingleNodeRedis(t testing.TB) {
	t.Helper()
	if RedisCluster(t) {
		t.Skip("needs a single Redis node; runs in the single-node pass")
	}
}

// redisAddrs splits the test Redis address as the service splits POPUP_REDIS_ADDR.
func redisAddrs(t testing.TB) []string {
	t.Helper()
	return config.Config{RedisAddr: RedisAddr(t)}.RedisAddrs()
}

// newRedis is a client of the test Redis without the service's tight timeouts; like the
// service's (redisstore.NewClient), it is a cluster client when there are several addresses.
func newRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: redisAddrs(t)})
}

// RedisPrefix returns a key prefix no other test uses, and deletes its keys when the test ends.
func RedisPrefix(t testing.TB) string {
	t.Helper()
	prefix := "t" + Suffix(t)
	c := newRedis(t)
	t.Cleanup(func() {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := RedisKeys(ctx, c, prefix+"*")
		if err != nil || len(keys) == 0 {
			return
		}
		// One DEL per key: a cluster refuses a multi-key DEL across slots.
		pipe := c.Pipeline()
		for _, k := range keys {
			pipe.Del(ctx, k)
		}
		_, _ = pipe.Exec(ctx)
	})
	return prefix
}

// RedisKeys returns the keys matching pattern, from every master when c is a cluster client.
func RedisKeys(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, node redis.Cmdable) error {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
		return keys, err
	}
	return keys, scan(ctx, c)
}

// Redis returns a client of the test Redis (a *redis.ClusterClient when it is a cluster), closed
// when the test ends.
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := newRedis(t)
	t.Cleanup(func() { c.Close() })
	return c
}

// BuildFlags returns the go build flags this test binary was built with that a test building one
// of the service's binaries must pass on: -tags (scripts/build.env's, under `make test`) and
// -race. The binary under test is then built as the test itself was, from the packages that
// build already compiled (under `make test`, a plain build would compile the service's whole
// dependency tree a second time, without -race, beside the tests).
func BuildFlags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var flags []string
	for _, s := range info.Settings {
		switch {
		case s.Key == "-tags":
			flags = append(flags, "-tags", s.Value)
		case s.Key == "-race" && s.Value == "true":
			flags = append(flags, "-race")
		}
	}
	return flags
}
