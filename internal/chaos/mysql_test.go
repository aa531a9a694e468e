//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// caughtUpBacklog is "the worker has caught up" under steadyLoad: fewer queued events than the
// load makes in a second (about 600), while the worker flushes every 100 ms.
const caughtUpBacklog = 500

// TestMySQLStopped: MariaDB shut down under steady event load for the plan's outage (60 s in the
// full run), then started again. docs/CONTRACT.md §6: MySQL being down only makes the queue grow.
// The API must not fail a single request of a known user (every GET 200, every action 202, or
// 503 + Retry-After when the process missed its budget), nor answer one degraded or 503 because
// of the outage: its failures from the stop to the end of the load are held against the steady
// window before it (assertNotBeyondChance; a process kept off the cores misses its budget in
// either). Once MariaDB is back the worker must drain the backlog with every acknowledged event
// in popup_action_log.
func TestMySQLStopped(t *testing.T) {
	s := newStack(t, "mysql-down", "everysec")
	s.startWorker()
	s.startAPI(s.redis.Addr())
	s.seed()
	rec := newRecorder()
	s.warm(rec, steadyLoad)
	// The warm-up's impressions reach MySQL first: the users are known to both stores.
	s.waitDrained(h.plan.drainDeadline)

	loadAt := rec.now()
	stopLoad := s.run(rec, steadyLoad)
	defer stopLoad()
	time.Sleep(h.plan.steady)
	base := s.apiStats()

	outageAt := rec.now()
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
	loadEnd := rec.now()
	stopLoad()

	drain := s.waitDrained(h.plan.drainDeadline)
	c := s.verify(rec)
	// The warm-up retries its degraded answers (warm): the checks start with the load.
	gets, acts := tallyOf(rec.window(kindGet, loadAt, rec.now())), tallyOf(rec.window(kindAction, loadAt, rec.now()))
	ctrlGets, outGets := tallyOf(rec.window(kindGet, loadAt, outageAt)), tallyOf(rec.window(kindGet, outageAt, rec.now()))
	ctrlActs, outActs := tallyOf(rec.window(kindAction, loadAt, outageAt)), tallyOf(rec.window(kindAction, outageAt, rec.now()))
	summary(t, "mysql-down",
		"down_s", fmt.Sprintf("%.1f", upAt.Sub(downAt).Seconds()), "stop_ms", stopTook.Milliseconds(), "start_ms", startTook.Milliseconds(),
		"gets", gets.n, "get_status", gets.statusList(), "degraded", gets.degraded, "get_errors", gets.errList(), "get_max_ms", gets.maxMs,
		"actions", acts.n, "action_status", acts.statusList(), "action_errors", acts.errList(),
		"steady_not_normal", fmt.Sprintf("%d/%d,%d/%d", ctrlGets.n-ctrlGets.ok, ctrlGets.n, ctrlActs.n-ctrlActs.ok, ctrlActs.n),
		"outage_not_normal", fmt.Sprintf("%d/%d,%d/%d", outGets.n-outGets.ok, outGets.n, outActs.n-outActs.ok, outActs.n),
		"backlog_peak", peak, "caught_up_after_restart_s", fmt.Sprintf("%.1f", caughtUp.Seconds()), "final_drain_ms", drain.Milliseconds(),
		"goroutines", fmt.Sprintf("%d→%d→%d", base.goroutines, during.goroutines, after.goroutines),
		"rss_mb", fmt.Sprintf("%.1f→%.1f→%.1f", base.rssMB, during.rssMB, after.rssMB),
		"acked", c.acked, "lost", c.lost, "unacked_applied", c.unacked, "dup_rows", c.dupRows, "state_mismatch", c.stateDiff, "stats_mismatch", c.statsDiff, "dead_lettered", c.dead)

	assert.Equal(t, gets.n, gets.statuses[http.StatusOK], "every GET answers 200")
	assert.Equal(t, acts.n, acts.statuses[http.StatusAccepted]+acts.status503, "actions answer 202 or 503, nothing else")
	assert.Equal(t, acts.status503, acts.retryAfter, "a 503 without Retry-After")
	assertNotBeyondChance(t, "requests of known users from MySQL's stop on", rec, span{outageAt, loadEnd}, span{loadAt, outageAt})
	assert.Positive(t, peak, "no backlog built up: the outage did not show")
	c.requireNoLoss(t)
}
