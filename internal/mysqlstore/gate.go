package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Gate is the rule "MySQL is down: fail at once" of a pool built by NewGatedPool. It lives
// under the repositories, in the driver the pool dials and queries through, so that every
// repository method on the pool is gated without a forwarder of its own.
type Gate struct {
	// Down reports MySQL known down (not before its first check): a gated call fails at once
	// with Err instead of waiting for a dial timeout.
	Down func() bool
	// Failed is told that a gated call found MySQL unreachable (Unavailable).
	Failed func()
	// Err is what a refused call fails with, and what wraps the error of a call that found MySQL
	// unreachable (the admin API answers it 503 mysql_unavailable).
	Err error
}

type ungatedKey struct{}

// Ungated marks ctx's calls as passing the gate whatever it says: the dependency check that
// finds MySQL back, the pool's prewarm, and the hot path's user-state loads, which have their
// own budget and never wait for a dial timeout's worth.
func Ungated(ctx context.Context) context.Context { return context.WithValue(ctx, ungatedKey{}, true) }

func gated(ctx context.Context) bool { return ctx.Value(ungatedKey{}) == nil }

// refuse is the error a call on ctx fails with before it reaches MySQL: nil while it may.
func (g *Gate) refuse(ctx context.Context) error {
	if gated(ctx) && g.Down() {
		return g.Err
	}
	return nil
}

// observe is the error a call on ctx returns: one that says MySQL is unreachable marks MySQL
// down and is wrapped in Err. The driver's own signals (the end of rows, skip) pass as they are.
func (g *Gate) observe(ctx context.Context, err error) error {
	if err == nil || err == io.EOF || errors.Is(err, driver.ErrSkip) || !gated(ctx) || !Unavailable(err) {
		return err
	}
	g.Failed()
	return fmt.Errorf("%w: %w", g.Err, err)
}

// observeStmt is observe for a statement on a pooled connection: driver.ErrBadConn there means
// a connection found dead before anything was sent (a stale one after a MySQL restart), which
// database/sql retries on another, dialling a new one last; that dial is observed (Connect).
func (g *Gate) observeStmt(ctx context.Context, err error) error {
	if errors.Is(err, driver.ErrBadConn) {
		return err
	}
	return g.observe(ctx, err)
}

// NewGatedPool is NewPool whose every call, from dial to the last row, passes g.
func NewGatedPool(dsn string, maxOpen int, g *Gate) (*sql.DB, error) {
	connector, err := newConnector(dsn)
	if err != nil {
		return nil, err
	}
	return pool(gatedConnector{Connector: connector, gate: g}, maxOpen), nil
}

// NewStagingPool is the pool an audience upload stages its rows through
// (AudienceRepo.StageThrough), gated by g when g is not nil: one connection, open while it is
// used and a minute after, that speaks the binary character set. A staged row is bytes (uids,
// or fingerprints) sent as a statement's parameter: on a utf8mb4 connection MySQL first scans
// it as text, character by character (about 30% of MariaDB's CPU on a 20 M replace); on a
// binary one it stores it as it is.
func NewStagingPool(dsn string, g *Gate) (*sql.DB, error) {
	connector, err := newConnector(dsn, mysql.Charset("binary", ""))
	if err != nil {
		return nil, err
	}
	if g != nil {
		connector = gatedConnector{Connector: connector, gate: g}
	}
	db := pool(connector, 1)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

type gatedConnector struct {
	driver.Connector
	gate *Gate
}

func (c gatedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := c.gate.refuse(ctx); err != nil {
		return nil, err
	}
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, c.gate.observe(ctx, err)
	}
	return &gatedConn{Conn: conn, gate: c.gate}, nil
}

// conn is what the MySQL driver's connection implements beyond driver.Conn; gatedConn passes
// each through.
type conn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// gatedConn gates the statements of one connection: each is refused while MySQL is known down,
// and its error observed.
type gatedConn struct {
	driver.Conn
	gate *Gate
}

func (c *gatedConn) inner() conn { return c.Conn.(conn) }

func (c *gatedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.gate.refuse(ctx); err != nil {
		return nil, err
	}
	tx, err := c.inner().BeginTx(ctx, opts)
	if err != nil {
		return nil, c.gate.observeStmt(ctx, err)
	}
	return gatedTx{Tx: tx, ctx: ctx, gate: c.gate}, nil
}

func (c *gatedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.gate.refuse(ctx); err != nil {
		return nil, err
	}
	st, err := c.inner().PrepareContext(ctx, query)
	return st, c.gate.observeStmt(ctx, err)
}

func (c *gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.gate.refuse(ctx); err != nil {
		return nil, err
	}
	res, err := c.inner().ExecContext(ctx, query, args)
	return res, c.gate.observeStmt(ctx, err)
}

func (c *gatedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.gate.refuse(ctx); err != nil {
		return nil, err
	}
	rows, err := c.inner().QueryContext(ctx, query, args)
	if err != nil {
		return nil, c.gate.observeStmt(ctx, err)
	}
	return &gatedRows{Rows: rows, ctx: ctx, gate: c.gate}, nil
}

func (c *gatedConn) Ping(ctx context.Context) error {
	if err := c.gate.refuse(ctx); err != nil {
		return err
	}
	return c.gate.observeStmt(ctx, c.inner().Ping(ctx))
}

func (c *gatedConn) ResetSession(ctx context.Context) error { return c.inner().ResetSession(ctx) }
func (c *gatedConn) IsValid() bool                          { return c.inner().IsValid() }
func (c *gatedConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.inner().CheckNamedValue(nv)
}

// gatedTx observes the end of a transaction: a commit that finds MySQL gone is a 503.
type gatedTx struct {
	driver.Tx
	ctx  context.Context
	gate *Gate
}

func (t gatedTx) Commit() error   { return t.gate.observe(t.ctx, t.Tx.Commit()) }
func (t gatedTx) Rollback() error { return t.gate.observe(t.ctx, t.Tx.Rollback()) }

// rows is what the MySQL driver's rows implement beyond driver.Rows.
type rows interface {
	driver.Rows
	driver.RowsNextResultSet
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// gatedRows observes the rows as they stream: a connection that breaks mid-read is a 503.
type gatedRows struct {
	driver.Rows
	ctx  context.Context
	gate *Gate
}

func (r *gatedRows) inner() rows { return r.Rows.(rows) }

func (r *gatedRows) Next(dest []driver.Value) error {
	return r.gate.observe(r.ctx, r.Rows.Next(dest))
}
func (r *gatedRows) HasNextResultSet() bool { return r.inner().HasNextResultSet() }
func (r *gatedRows) NextResultSet() error   { return r.gate.observe(r.ctx, r.inner().NextResultSet()) }
func (r *gatedRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.inner().ColumnTypeDatabaseTypeName(i)
}
func (r *gatedRows) ColumnTypeNullable(i int) (bool, bool) {
	return r.inner().ColumnTypeNullable(i)
}
func (r *gatedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return r.inner().ColumnTypePrecisionScale(i)
}
func (r *gatedRows) ColumnTypeScanType(i int) reflect.Type { return r.inner().ColumnTypeScanType(i) }
