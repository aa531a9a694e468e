// Package testenv gives integration tests a real MariaDB database and a real Redis namespace,
// both started by the test harness (scripts/test.sh, run by `make test`), never mocks and never
// the machine's default services.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
)

// Env names the variables scripts/test.sh exports.
const (
	EnvMySQL = "POPUP_TEST_MYSQL_DSN" // DSN of a user allowed to create databases, no database name
	EnvRedis = "POPUP_TEST_REDIS_ADDR"
)

func need(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		// Fail, never skip: a skipped integration test would pass silently.
		t.Fatalf("%s is not set: integration tests run under `make test`, which starts their MariaDB and Redis", name)
	}
	return v
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

// RedisAddr is the test Redis.
func RedisAddr(t testing.TB) string {
	t.Helper()
	return need(t, EnvRedis)
}

// RedisPrefix returns a key prefix no other test uses, and deletes its keys when the test ends.
func RedisPrefix(t testing.TB) string {
	t.Helper()
	prefix := "t" + Suffix(t)
	addr := RedisAddr(t)
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return prefix
}

// Redis returns a client of the test Redis, closed when the test ends.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: RedisAddr(t)})
	t.Cleanup(func() { c.Close() })
	return c
}
