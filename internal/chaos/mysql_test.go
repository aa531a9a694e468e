//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMySQLStopped: MariaDB shut down under steady event load for the plan's outage (60 s in the
// full run), then started again. docs/CONTRACT.md §6: MySQL being down only makes the queue grow. The API must
// not fail a single request of a known user, and once MariaDB is back the worker must drain the
// backlog with every acknowledged event in popup_action_log.
// caughtUpBacklog is "the worker has caught up" under steadyLoad: fewer queued events than the
// load makes in a second (about 600), while the worker flushes every 100 ms.
const caughtUpBacklog = 500

func TestMySQLStopped(t *testing.T) {
	s := newStack(t, "mysql-down", "everysec")
	s.startWorker()
	s.startAPI(s.redis.Addr())
	s.seed()
	rec := newRecorder()
	s.warm(rec, steadyLoad)
	// The warm-up's impressions reach MySQL first: the users are known to both stores.
	s.waitDrained(h.plan.drainDeadline)

	stopLoad := s.run(rec, steadyLoad)
	defer stopLoad()
	time.Sleep(h.plan.steady)
	base := s.apiStats()

	downAt := time.Now()
	require.NoError(t, h.mysql.stop())
	stopTook := time.Since(downAt)
	time.Sleep(h.plan.mysqlOutage - stopTook)
	bctx, bcancel := context.WithTimeout(context.Background(), 5*time.Second)
	peak, err := s.backlog(bctx)
	bcancel()
	require.NoError(t, err)
	during := s.apiStats()
	upAt := time.Now()
	require.NoError(t, h.mysql.start())
	startTook := time.Since(upAt)
	// Caught up: the backlog is back under caughtUpBacklog while the load goes on.
	caughtUp := s.waitBacklogBelow(caughtUpBacklog, h.plan.drainDeadline)
	time.Sleep(h.plan.steady)
	after := s.apiStats()
	stopLoad()

	drain := s.waitDrained(h.plan.drainDeadline)
	c := s.verify(rec)
	gets := tallyOf(rec.window(kindGet, 0, rec.now()))
	acts := tallyOf(rec.window(kindAction, 0, rec.now()))
	summary(t, "mysql-down",
		"down_s", fmt.Sprintf("%.1f", upAt.Sub(downAt).Seconds()), "stop_ms", stopTook.Milliseconds(), "start_ms", startTook.Milliseconds(),
		"gets", gets.n, "get_status", gets.statusList(), "degraded", gets.degraded, "get_errors", gets.errList(), "get_max_ms", gets.maxMs,
		"actions", acts.n, "action_status", acts.statusList(), "action_errors", acts.errList(),
		"backlog_peak", peak, "caught_up_after_restart_s", fmt.Sprintf("%.1f", caughtUp.Seconds()), "final_drain_ms", drain.Milliseconds(),
		"goroutines", fmt.Sprintf("%d→%d→%d", base.goroutines, during.goroutines, after.goroutines),
		"rss_mb", fmt.Sprintf("%.1f→%.1f→%.1f", base.rssMB, during.rssMB, after.rssMB),
		"acked", c.acked, "lost", c.lost, "unacked_applied", c.unacked, "dup_rows", c.dupRows, "state_mismatch", c.stateDiff, "stats_mismatch", c.statsDiff, "dead_lettered", c.dead)

	assert.Equal(t, gets.n, gets.ok, "every GET of a known user answers normally while MySQL is down")
	assert.Equal(t, acts.n, acts.ok, "every action of a known user is accepted while MySQL is down")
	assert.Positive(t, peak, "no backlog built up: the outage did not show")
	c.requireNoLoss(t)
}
