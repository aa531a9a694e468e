// Package testenv gives integration tests a real MariaDB database and a real Redis namespace,
// both started by the test harness (scripts/test.sh, run by `make test`), never mocks and never
// the machine's default services. The Redis is a single node, or a Redis Cluster when
// POPUP_TEST_REDIS_ADDR holds several comma-separated seeds.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
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
	// EnvTimedElsewhere=1 (the go stage of `make test`) skips the tests marked Timed: the
	// timed stage runs them afterwards, alone on the machine.
	EnvTimedElsewhere = "POPUP_TEST_TIMED_ELSEWHERE"
)

// Timed marks a test whose assertions are timings of a shared machine (a request within its
// budget while a fault is on): under `make test` it runs in the timed stage, when nothing else
// runs, instead of beside the other packages' tests, compiles and browsers, whose CPU made it
// fail by chance (scripts/test.sh, "timed"). Run alone with `go test`, it runs.
func Timed(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvTimedElsewhere) == "1" {
		t.Skipf("%s=1: a timing test; make test runs it in its timed stage, alone", EnvTimedElsewhere)
	}
}

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
	if migrate {
		tmpl, err := migratedTemplate(*cfg)
		require.NoError(t, err)
		require.NoError(t, copyDatabase(ctx, admin, tmpl, name))
	}
	cfg.DBName = name
	return cfg.FormatDSN()
}

// template is the database that migratedTemplate made for this test process.
var template struct {
	once sync.Once
	name string
	err  error
}

// migratedTemplate returns the name of a database that mysqlstore.Migrate has migrated, made
// once per content of the migrations (their digest names it) and shared by the test processes
// of a run, which copy it (copyDatabase) for every test that asks for a migrated database.
// Copying the tables' definitions costs MariaDB a CREATE TABLE each, where migrating ran every
// migration's statements (ALTERs that rebuild tables) and goose parsed every file again, per
// test. The migrations themselves are tested on databases of their own (internal/mysqlstore),
// and TestMigratedCopyIsTheMigratedSchema checks that a copy is what migrating gives.
func migratedTemplate(base mysql.Config) (string, error) {
	template.once.Do(func() { template.name, template.err = makeTemplate(base) })
	return template.name, template.err
}

func makeTemplate(base mysql.Config) (string, error) {
	sum, files := sha256.New(), mysqlstore.Migrations()
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, path)
		fmt.Fprintf(sum, "%s %d\n", path, len(b))
		sum.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	name := "test_migrated_" + hex.EncodeToString(sum.Sum(nil))[:16]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := mysqlstore.Open(ctx, base.FormatDSN(), 1)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	// One process of the run makes it; the others wait here, then find it complete. MariaDB
	// releases the lock if this process dies.
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var locked sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 100)", name).Scan(&locked); err != nil {
		return "", err
	}
	if locked.Int64 != 1 {
		return "", fmt.Errorf("template database %s: lock not granted in 100 s", name)
	}
	defer conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK(?)", name) // as closing the connection, next, would
	cfg := base
	cfg.DBName = name
	var exists int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists == 1 {
		// complete unless a process died while migrating it: then it is made again
		db, err := mysqlstore.Open(ctx, cfg.FormatDSN(), 1)
		if err != nil {
			return "", err
		}
		current, latest, err := mysqlstore.SchemaVersions(ctx, db)
		db.Close()
		if err == nil && current == latest {
			return name, nil
		}
		if _, err := conn.ExecContext(ctx, "DROP DATABASE "+name); err != nil {
			return "", err
		}
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return "", err
	}
	db, err := mysqlstore.Open(ctx, cfg.FormatDSN(), 2)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := mysqlstore.Migrate(ctx, db); err != nil {
		return "", fmt.Errorf("template database %s: %w", name, err)
	}
	return name, nil
}

// copyDatabase copies the tables of database from into the empty database to: their definitions
// as SHOW CREATE TABLE gives them (keys, foreign keys, generated columns, AUTO_INCREMENT) and
// their rows (the migrations' seed rows and goose's versions).
func copyDatabase(ctx context.Context, admin *sql.DB, from, to string) error {
	conn, err := admin.Conn(ctx)
	if err != nil {
		return err
	}
	// The session's default database and foreign_key_checks must not go back to the pool: Raw's
	// ErrBadConn discards the connection instead.
	defer conn.Raw(func(any) error { return driver.ErrBadConn })
	tables, err := queryStrings(ctx, conn, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = ? AND table_type = 'BASE TABLE' ORDER BY table_name`, from)
	if err != nil {
		return err
	}
	// foreign keys may name a table created after theirs
	for _, q := range []string{"USE " + to, "SET SESSION foreign_key_checks = 0"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	for _, table := range tables {
		var ddl string
		if err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+from+".`"+table+"`").Scan(&table, &ddl); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("copy %s.%s: %w", from, table, err)
		}
		src := from + ".`" + table + "`"
		var rows bool
		if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+src+")").Scan(&rows); err != nil {
			return err
		}
		if !rows {
			continue
		}
		// the columns a row can be given: not the generated ones
		cols, err := queryStrings(ctx, conn, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = ? AND table_name = ? AND extra NOT LIKE '%GENERATED%'
			ORDER BY ordinal_position`, from, table)
		if err != nil {
			return err
		}
		list := "`" + strings.Join(cols, "`, `") + "`"
		if _, err := conn.ExecContext(ctx, "INSERT INTO `"+table+"` ("+list+") SELECT "+list+" FROM "+src); err != nil {
			return fmt.Errorf("copy the rows of %s: %w", src, err)
		}
	}
	return nil
}

// querier is what *sql.DB and *sql.Conn share.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryStrings returns the first column of q's rows.
func queryStrings(ctx context.Context, db querier, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
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

// ProcessCPU is the CPU time (user and system, every thread) this process has used so far. A
// benchmark that reads it around its loop reports CPU per operation beside the wall clock's
// ns/op, which on a shared machine also counts the time other processes held the cores.
func ProcessCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
