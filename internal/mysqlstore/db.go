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
	return db, nil
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
