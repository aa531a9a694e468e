// Package mysqlstore holds the MySQL adapters, persistence only: connection set-up, migrations,
// the config repository and the transaction the popup writes run in (the rules of those writes
// are internal/manage's), the user-state loader and the batched event writer.
package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"
)

// NewPool builds the pool with the driver parameters the service relies on, whatever the DSN
// says: parseTime, UTC on both ends, and client-side placeholder interpolation (one round trip
// per statement; values are still escaped by the driver, never concatenated by us). It does not
// reach the server (database/sql dials on first use): a bad DSN is its only error, so a binary
// can start while MySQL is down and track its availability instead.
func NewPool(dsn string, maxOpen int) (*sql.DB, error) {
	connector, err := newConnector(dsn)
	if err != nil {
		return nil, err
	}
	return pool(connector, maxOpen), nil
}

// newConnector is the MySQL connector of dsn with the parameters NewPool promises, then opts.
func newConnector(dsn string, opts ...mysql.Option) (driver.Connector, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse MySQL DSN: %w", err)
	}
	if err := cfg.Apply(opts...); err != nil {
		return nil, fmt.Errorf("MySQL DSN: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	cfg.ClientFoundRows = false // EventWriter counts the rows an upsert inserted by its affected rows
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
	return connector, nil
}

// pool is the pool over connector, sized and aged as the service runs it.
func pool(connector driver.Connector, maxOpen int) *sql.DB {
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxLifetime(5 * time.Minute)
	return db
}

// Open is NewPool, then a ping (failing when MySQL cannot be reached) and a prewarmed pool: for
// tools and tests that need MySQL now.
func Open(ctx context.Context, dsn string, maxOpen int) (*sql.DB, error) {
	db, err := NewPool(dsn, maxOpen)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to MySQL: %w", err)
	}
	Prewarm(pingCtx, db, min(maxOpen, 8))
	return db, nil
}

// Unavailable reports whether err says MySQL could not be reached or the connection broke (as
// opposed to a query MySQL refused): the caller should mark MySQL down and retry later.
func Unavailable(err error) bool {
	var ne net.Error
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return false
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn), errors.As(err, &ne):
		return true
	case errors.As(err, &me):
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Prewarm opens n connections at once and returns them to the idle pool, so that the first
// burst of requests (new users' state loads, within an 80 ms budget) does not pay for dialling
// and authenticating. Failures are ignored: the pool dials on demand anyway.
func Prewarm(ctx context.Context, db *sql.DB, n int) {
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
