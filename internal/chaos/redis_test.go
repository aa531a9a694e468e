//go:build chaos

package chaos

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

// The promises of docs/CONTRACT.md §3 while Redis is unreachable or slow.
const (
	getBudget      = 100 * time.Millisecond // every GET answers within this, degraded if need be (assertGetsWithinBudget)
	recoveryLimit  = 5 * time.Second        // normal service again this long after Redis heals
	goroutineSlack = 20                     // goroutines back within this of the baseline
	rssSlackMB     = 32.0                   // resident memory back within this of the baseline
)

// steadyLoad is the moderate load the Redis and MySQL scenarios run under: about 400 GET/s and
// 200 actions/s at most, every answered GET an impression event.
var steadyLoad = load{getters: 4, actors: 2, users: 16, pause: 10 * time.Millisecond}

// TestRedisStopped: redis-server shut down (SIGTERM) and started again on the same port and data.
func TestRedisStopped(t *testing.T) {
	runRedisFault(t, "redis-down", func(s *stack, _ *testenv.Proxy) func() {
		s.redis.signal(syscall.SIGTERM)
		s.redis.wait(t)
		return func() { s.redis.start(t) }
	})
}

// TestRedisHung: redis-server frozen (SIGSTOP) then resumed: connections open, nothing answers.
func TestRedisHung(t *testing.T) {
	runRedisFault(t, "redis-hang", func(s *stack, _ *testenv.Proxy) func() {
		s.redis.signal(syscall.SIGSTOP)
		return func() { s.redis.signal(syscall.SIGCONT) }
	})
}

// TestRedisSlow: 200 ms added to every chunk in each direction between popup-api and Redis.
func TestRedisSlow(t *testing.T) {
	runRedisFault(t, "redis-slow", func(_ *stack, p *testenv.Proxy) func() {
		p.SetDelay(200 * time.Millisecond)
		return func() { p.SetDelay(0) }
	})
}

// runRedisFault runs the steady load against popup-api (whose Redis sits behind a proxy), injects
// the fault for the plan's outage, heals it, and checks docs/CONTRACT.md §3 and §6: every GET 200 within
// 100 ms (degraded during the fault), actions 503 with Retry-After, normal service within 5 s of
// healing, goroutines and memory back to the baseline, and every acknowledged event in MySQL.
func runRedisFault(t *testing.T, name string, inject func(*stack, *testenv.Proxy) (heal func())) {
	s := newStack(t, name, "everysec")
	s.startWorker()
	proxy := testenv.NewProxy(t, s.redis.Addr())
	s.startAPI(proxy.Addr())
	s.seed()
	rec := newRecorder()
	s.warm(rec, steadyLoad)

	loadAt := rec.now()
	stopLoad := s.run(rec, steadyLoad)
	defer stopLoad()
	time.Sleep(h.plan.steady)
	base := s.apiStats()

	faultAt := rec.now()
	heal := inject(s, proxy)
	traced := s.traceAPI(h.plan.redisOutage)
	time.Sleep(h.plan.redisOutage)
	traced()
	during := s.apiStats()
	healAt := rec.now()
	heal()
	waitNormal(t, rec, healAt, 3*recoveryLimit)
	time.Sleep(h.plan.steady)
	after := s.apiStats()
	loadEnd := rec.now()
	stopLoad()

	drain := s.waitDrained(h.plan.drainDeadline)
	c := s.verify(rec)
	all := tallyOf(rec.window(kindGet, 0, rec.now()))
	outGets := tallyOf(rec.window(kindGet, faultAt, healAt))
	outActs := tallyOf(rec.window(kindAction, faultAt, healAt))
	acts := tallyOf(rec.window(kindAction, 0, rec.now()))
	rcv := recovery(t, rec, healAt)
	steady, back := span{loadAt, faultAt}, span{healAt + max(rcv, recoveryLimit), loadEnd}
	_, afterLimit := chance(rec, back, steady)
	slow := s.slowGets()
	summary(t, name,
		"outage_s", h.plan.redisOutage.Seconds(), "gets", all.n, "get_status", all.statusList(), "get_errors", all.errList(),
		"get_p99_ms", all.p99Ms, "get_max_ms", all.maxMs, "get_max_server_ms", all.maxServerMs, "get_slowest_client_ms", all.slowestClientMs,
		"server_gets_over_100ms", slow,
		"outage_gets", outGets.n, "outage_degraded", outGets.degraded, "outage_get_max_ms", outGets.maxMs,
		"actions", acts.n, "outage_actions", outActs.n, "outage_action_status", outActs.statusList(),
		"outage_503_retry_after", fmt.Sprintf("%d/%d", outActs.retryAfter, outActs.status503), "action_errors", acts.errList(),
		"recovery_ms", ms(rcv), "failed_after_limit_steady_chance", afterLimit, "goroutines", fmt.Sprintf("%d→%d→%d", base.goroutines, during.goroutines, after.goroutines),
		"rss_mb", fmt.Sprintf("%.1f→%.1f→%.1f", base.rssMB, during.rssMB, after.rssMB),
		"heap_mb", fmt.Sprintf("%.1f→%.1f→%.1f", base.heapMB, during.heapMB, after.heapMB),
		"acked", c.acked, "lost", c.lost, "unacked_applied", c.unacked, "dup_rows", c.dupRows, "state_mismatch", c.stateDiff, "stats_mismatch", c.statsDiff, "dead_lettered", c.dead,
		"drain_ms", drain.Milliseconds())

	assert.Equal(t, all.n, all.statuses[http.StatusOK], "every GET answers 200")
	assert.Zero(t, all.transportErr, "GET transport errors")
	assertGetsWithinBudget(t, all, slow)
	assert.Positive(t, outGets.degraded, "the fault never showed: no degraded answer")
	assert.Positive(t, outActs.status503, "the fault never showed: no action answered 503")
	assert.Equal(t, outActs.status503, outActs.retryAfter, "a 503 without Retry-After")
	assert.Equal(t, acts.n, acts.statuses[http.StatusAccepted]+acts.status503, "actions answer 202 or 503, nothing else")
	assert.LessOrEqual(t, rcv, recoveryLimit, "service not back within %s of healing", recoveryLimit)
	assertNotBeyondChance(t, "requests after the recovery limit", rec, back, steady)
	assert.LessOrEqual(t, after.goroutines, base.goroutines+goroutineSlack, "goroutines did not come back")
	assert.LessOrEqual(t, after.rssMB, base.rssMB+rssSlackMB, "resident memory did not come back")
	c.requireNoLoss(t)
}

// waitNormal waits, while the load runs, until a GET and an action started after since have both
// been answered normally and the service is back as recovery reads it (recoveryOf).
func waitNormal(t *testing.T, rec *recorder, since, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var get, act bool
		outs := rec.all()
		for _, o := range outs {
			if o.at >= since && o.ok() {
				get = get || o.kind == kindGet
				act = act || o.kind == kindAction
			}
		}
		// Back as recovery reads it, not at the first normal answers: breakers of other uid
		// shards may still be open then, and a scenario that stops its load at once would end
		// on their degraded answers.
		if _, back, _ := recoveryOf(outs, since, rec.now()); get && act && back {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.FailNow(t, "no normal answer after the fault was healed", "waited %s", within)
}

// assertGetsWithinBudget checks docs/CONTRACT.md §3's bound on every GET where the service is:
// from the request written to the answer's first byte (outcome.server: popup-api, the loopback
// and the kernel's scheduling of both), and by popup-api's own histogram (slow: GETs it timed
// over 100 ms). The client's share before the write and after the first byte (its connection
// pool, its goroutines' scheduling in this test process, which also runs the scenarios'
// proxies and other scenarios' load) is printed as get_slowest_client_ms, not held to the bound:
// a make test run saw a GET of 106 ms whose server share was 84.7 ms (docs/RELIABILITY.md).
func assertGetsWithinBudget(t *testing.T, gets tally, slow int) {
	t.Helper()
	assert.LessOrEqual(t, gets.maxServerMs, ms(getBudget), "a GET's answer took longer than %s from its request written to its first byte", getBudget)
	assert.Zero(t, slow, "popup-api timed GETs over %s", getBudget)
}
