package mysqlstore_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

var errGateTest = errors.New("mysql unavailable (test)")

// gateState is a Gate's dependency as the tests drive it.
type gateState struct {
	down   atomic.Bool
	failed atomic.Int32
}

func (g *gateState) gate() *mysqlstore.Gate {
	return &mysqlstore.Gate{Down: g.down.Load, Failed: func() { g.failed.Add(1); g.down.Store(true) }, Err: errGateTest}
}

// TestTheGateRefusesEveryRepositoryCallWhileMySQLIsDown: with MySQL known down, any repository
// method on a gated pool fails at once with the gate's error (no forwarder of its own), a call
// marked Ungated still reaches MySQL, and once MySQL is back the same methods work.
func TestTheGateRefusesEveryRepositoryCallWhileMySQLIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var st gateState
	db, err := mysqlstore.NewGatedPool(testenv.MySQLDSN(t, true), 4, st.gate())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	popups, settings, goals := mysqlstore.NewPopupRepo(db), mysqlstore.NewSettingsRepo(db), mysqlstore.NewGoalRepo(db)

	_, err = popups.List(ctx, false)
	require.NoError(t, err, "up: calls pass")

	st.down.Store(true)
	_, err = popups.List(ctx, false)
	assert.ErrorIs(t, err, errGateTest)
	_, err = settings.Get(ctx, "reporting_time_zone", "UTC")
	assert.ErrorIs(t, err, errGateTest)
	_, err = goals.Goals(ctx)
	assert.ErrorIs(t, err, errGateTest)
	assert.NoError(t, db.PingContext(mysqlstore.Ungated(ctx)), "an ungated call (the dependency check) still reaches MySQL")
	assert.Zero(t, st.failed.Load(), "a refusal is not a failure")

	st.down.Store(false)
	_, err = settings.Get(ctx, "reporting_time_zone", "UTC")
	assert.NoError(t, err)
}

// TestTheGateMarksMySQLDownWhenACallCannotReachIt: a call that cannot reach MySQL tells the gate
// (Failed) and fails with the gate's error wrapping the cause; the next call is refused at once.
func TestTheGateMarksMySQLDownWhenACallCannotReachIt(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now: a dial is refused
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.DBName = "tcp", addr, "nobody", "nothing"
	var st gateState
	db, err := mysqlstore.NewGatedPool(cfg.FormatDSN(), 2, st.gate())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	_, err = mysqlstore.NewPopupRepo(db).List(context.Background(), false)
	require.ErrorIs(t, err, errGateTest)
	var ne net.Error
	assert.ErrorAs(t, err, &ne, "the cause is kept")
	assert.Equal(t, int32(1), st.failed.Load())

	_, err = mysqlstore.NewSettingsRepo(db).Get(context.Background(), "reporting_time_zone", "UTC")
	require.ErrorIs(t, err, errGateTest)
	assert.Equal(t, int32(1), st.failed.Load(), "refused at once: no second dial")
}
