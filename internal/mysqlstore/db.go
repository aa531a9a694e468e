// Package mysqlstore holds the MySQL adapters: connection set-up, migrations, the config
// repository, the user-state loader and the batched event writer.
package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Open connects with the driver parameters the service relies on, whatever the DSN says:
// parseTime, UTC on both ends, and client-side placeholder interpolation (one round trip per
// statement; values are still escaped by the driver, never concatenated by us).
func Open(ctx context.Context, dsn string, maxOpen int) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse MySQL DSN: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("MySQL connector: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxLifetime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to MySQL at %s: %w", cfg.Addr, err)
	}
	prewarm(pingCtx, db, min(maxOpen, 8))
	return db, nil
}

// prewarm opens n connections at once and returns them to the idle pool, so that the first
// burst of requests (new users' state loads, within an 80 ms budget) does not pay for dialling
// and authenticating. Failures are ignored: the pool dials on demand anyway.
func prewarm(ctx context.Context, db *sql.DB, n int) {
	conns := make([]*sql.Conn, 0, n)
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
}

// zeroTime is how "never" is stored: NOT NULL columns keep GREATEST() merges NULL-free.
var zeroTime = time.Unix(0, 0).UTC()

// toDB maps Go's zero time to the stored "never".
func toDB(t time.Time) time.Time {
	if t.IsZero() || t.Before(zeroTime) {
		return zeroTime
	}
	return t.UTC()
}

// fromDB maps the stored "never" back to Go's zero time.
func fromDB(t time.Time) time.Time {
	if !t.After(zeroTime) {
		return time.Time{}
	}
	return t.UTC()
}
