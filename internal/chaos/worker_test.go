//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerKillStorm: two popup-worker slots, each worker SIGKILLed by the test after a random
// 0.3-1.5 s of life and also killing itself between commit and acknowledgement (failpoint, 5% of
// batches), while the API takes steady event load. docs/CONTRACT.md §6: a worker killed at any
// instant leaves every event written or still in Redis. Afterwards one clean worker drains; every
// acknowledged event must be in the action log once, and no impression counted twice.
//
// The homepage path shares nothing with the workers but Redis, so the storm must not fail a
// request or degrade one. A degraded answer within the budget is also what a process kept off
// the cores gives (docs/RELIABILITY.md, "Worker killed at any instant"): the storm runs after a
// control window of the same load and as long, one worker draining and none killed, on the same
// machine, and the storm fails the scenario when the service failed in it (the quarter-seconds in
// which a request was not normal service: failures) more often than in the control, beyond chance
// (assertNotBeyondChance).
// POPUP_CHAOS_STORM_STALL=150ms makes the storm degrade answers itself, to show that this fails:
// every SIGKILL by the test is followed by a CLIENT PAUSE of that long on the storm's Redis.
func TestWorkerKillStorm(t *testing.T) {
	stall, err := stormStall()
	require.NoError(t, err)
	s := newStack(t, "worker-storm", "everysec")
	s.startAPI(s.redis.Addr())
	s.seed()
	rec := newRecorder()
	s.warm(rec, steadyLoad)
	s.slowlogReset()
	sched := watchSched(rec, watchedProc{pid: s.api.pid()}, watchedProc{pid: s.redis.proc.pid(), mainThread: true})
	defer sched.stop()

	stopLoad := s.run(rec, steadyLoad)
	defer stopLoad()
	calm, _ := s.startWorker()
	controlAt := rec.now()
	reasons0 := s.degradedReasons()
	time.Sleep(h.plan.storm)
	calm.signal(syscall.SIGTERM)
	calm.waitExit(t, 30*time.Second)
	require.True(t, calm.cmd.ProcessState.Success(), "the control window's worker exit status after SIGTERM: %v", calm.err)
	reasons1 := s.degradedReasons()

	stormLog := filepath.Join(s.dir, "storm.log")
	env := append(append([]string{}, s.env...), "POPUP_WORKER_FAILPOINT=after-commit-before-ack:0.05")
	var (
		starts, kills, selfKills atomic.Int64
		mu                       sync.Mutex
		unexpected               []string
		storm                    sync.WaitGroup
	)
	stop := make(chan struct{})
	endStorm := sync.OnceFunc(func() { close(stop); storm.Wait() })
	defer endStorm()
	stormAt := rec.now()
	traced := s.traceAPI(h.plan.storm)
	for slot := range 2 {
		storm.Go(func() {
			r := rand.New(rand.NewPCG(uint64(slot), uint64(time.Now().UnixNano())))
			for n := 0; n < 100_000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				// Port 0: nothing here talks to a storm worker's listener, and a port picked in
				// advance can be taken meanwhile by one of the load's outgoing connections.
				p, err := spawn("popup-worker", stormLog, h.worker, append(env, "POPUP_WORKER_ADDR=127.0.0.1:0"))
				if err == nil {
					starts.Add(1)
					life := time.NewTimer(time.Duration(300+r.IntN(1200)) * time.Millisecond)
					select {
					case <-p.done:
						if p.killedBy(syscall.SIGKILL) {
							selfKills.Add(1)
						} else {
							err = fmt.Errorf("worker exited by itself: %v", p.err)
						}
					case <-life.C:
						p.signal(syscall.SIGKILL)
						<-p.done
						kills.Add(1)
						if stall > 0 {
							err = s.pauseRedis(stall)
						}
					case <-stop:
						p.signal(syscall.SIGKILL)
						<-p.done
					}
					life.Stop()
				}
				if err != nil {
					mu.Lock()
					unexpected = append(unexpected, err.Error())
					mu.Unlock()
					return
				}
			}
		})
	}
	time.Sleep(h.plan.storm)
	stormEnd := rec.now()
	reasons2 := s.degradedReasons()
	stopLoad()
	endStorm()
	traced()
	sched.stop()
	require.Empty(t, unexpected, "workers failed other than by SIGKILL:\n%s", tail(stormLog, 20))

	_, cleanLog := s.startWorker()
	drain := s.waitDrained(h.plan.drainDeadline)
	c := s.verify(rec)
	ctrlGets, stormGets := tallyOf(rec.window(kindGet, controlAt, stormAt)), tallyOf(rec.window(kindGet, stormAt, stormEnd))
	ctrlActs, stormActs := tallyOf(rec.window(kindAction, controlAt, stormAt)), tallyOf(rec.window(kindAction, stormAt, stormEnd))
	gets, acts := tallyOf(rec.window(kindGet, controlAt, rec.now())), tallyOf(rec.window(kindAction, controlAt, rec.now()))
	reclaimedLists, reclaimedEvents := reclaims(t, stormLog, cleanLog)
	ctrlSlow, stormSlow := s.slowlog(rec.start.Add(controlAt), rec.start.Add(stormAt)), s.slowlog(rec.start.Add(stormAt), rec.start.Add(stormEnd))
	ctrl, stormSpan := span{controlAt, stormAt}, span{stormAt, stormEnd}
	_, failed := chance(rec, stormSpan, ctrl)
	summary(t, "worker-storm",
		"storm_s", h.plan.storm.Seconds(), "worker_starts", starts.Load(), "sigkill_by_test", kills.Load(),
		"sigkill_after_commit_before_ack", selfKills.Load(), "reclaimed_lists", reclaimedLists, "reclaimed_events", reclaimedEvents,
		"gets", gets.n, "get_status", gets.statusList(), "actions", acts.n, "action_status", acts.statusList(),
		"control_gets_degraded", fmt.Sprintf("%d/%d", ctrlGets.degraded, ctrlGets.n), "storm_gets_degraded", fmt.Sprintf("%d/%d", stormGets.degraded, stormGets.n),
		"control_actions_not_202", fmt.Sprintf("%d/%d", ctrlActs.n-ctrlActs.ok, ctrlActs.n), "storm_actions_not_202", fmt.Sprintf("%d/%d", stormActs.n-stormActs.ok, stormActs.n),
		"control_reasons", reasons1.minus(reasons0), "storm_reasons", reasons2.minus(reasons1),
		"failed_storm_control_chance", failed,
		"control_redis_slowlog_10ms", ctrlSlow, "storm_redis_slowlog_10ms", stormSlow,
		"acked", c.acked, "lost", c.lost, "dup_rows", c.dupRows, "state_mismatch", c.stateDiff, "stats_mismatch", c.statsDiff, "dead_lettered", c.dead, "unacked_applied", c.unacked,
		"final_drain_ms", drain.Milliseconds())
	// Each answer that was not normal service, with what the kernel says of the processes meanwhile
	// (the first maxListed of each window), in the failure's output and in not-normal.txt beside
	// the scenario's logs (POPUP_CHAOS_KEEP=1 keeps them).
	var listing strings.Builder
	listed := map[bool]int{}
	for _, o := range rec.all() {
		if o.at < controlAt || o.at >= stormEnd || o.ok() || listed[o.at >= stormAt] >= maxListed {
			continue
		}
		listed[o.at >= stormAt]++
		apiLongest, apiTotal := sched.waits(0, o.at, o.at+o.took)
		redisWait, _ := sched.waits(1, o.at, o.at+o.took)
		window := "control"
		if o.at >= stormAt {
			window = "storm"
		}
		fmt.Fprintf(&listing, "%s %c status=%d degraded=%v at=%.1fms took=%.1fms server=%.1fms api_runq_wait_longest_thread=%.1fms api_runq_wait_all_threads=%.1fms redis_runq_wait=%.1fms\n",
			window, o.kind, o.status, o.degraded, ms(o.at), ms(o.took), ms(o.server), ms(apiLongest), ms(apiTotal), ms(redisWait))
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.dir, "not-normal.txt"), []byte(listing.String()), 0o644))
	if listing.Len() > 0 {
		t.Logf("requests that were not normal service (window, kind, and what the kernel says of popup-api and redis-server meanwhile):\n%s", listing.String())
	}

	assert.Equal(t, gets.n, gets.statuses[http.StatusOK], "every GET answers 200")
	assert.Equal(t, acts.n, acts.statuses[http.StatusAccepted]+acts.status503, "actions answer 202 or 503, nothing else")
	assert.Equal(t, acts.status503, acts.retryAfter, "a 503 without Retry-After")
	assertNotBeyondChance(t, "requests during the storm", rec, stormSpan, ctrl)
	assert.Positive(t, kills.Load()+selfKills.Load(), "no worker was killed")
	c.requireNoLoss(t)
}

// maxListed bounds the answers the storm lists per window.
const maxListed = 20

var reclaimLine = regexp.MustCompile(`reclaimed the processing list of a dead worker.*"events":(\d+)`)

// reclaims counts the processing lists the workers reclaimed from dead workers, and their events.
func reclaims(t *testing.T, logs ...string) (lists, events int) {
	t.Helper()
	for _, path := range logs {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, m := range reclaimLine.FindAllSubmatch(raw, -1) {
			n, _ := strconv.Atoi(string(m[1]))
			lists++
			events += n
		}
	}
	return lists, events
}

// stormStall reads POPUP_CHAOS_STORM_STALL: how long the storm pauses Redis after each SIGKILL
// by the test (0: never, the scenario as it runs in make test and make chaos).
func stormStall() (time.Duration, error) {
	v := os.Getenv("POPUP_CHAOS_STORM_STALL")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("POPUP_CHAOS_STORM_STALL=%q: want a positive duration such as 150ms", v)
	}
	return d, nil
}

// pauseRedis holds every client of the stack's Redis for d (CLIENT PAUSE ... ALL).
func (s *stack) pauseRedis(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.rdb.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err()
}

// redisSlowCommand: Redis logs every command that ran this long or longer in its SLOWLOG.
const redisSlowCommand = 10 * time.Millisecond

// slowlogReset empties the stack's Redis SLOWLOG and has it keep every command that ran
// redisSlowCommand or longer: Redis's own account of a command that kept it busy.
func (s *stack) slowlogReset() {
	t := s.t
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	require.NoError(t, s.rdb.ConfigSet(ctx, "slowlog-log-slower-than", strconv.FormatInt(redisSlowCommand.Microseconds(), 10)).Err())
	require.NoError(t, s.rdb.ConfigSet(ctx, "slowlog-max-len", "1024").Err())
	require.NoError(t, s.rdb.SlowLogReset(ctx).Err())
}

// slowlog lists the commands Redis logged as slow between from and to (to the second: the
// log's resolution) as "COMMAND:ms,..." ("0" for none), a script with its first key.
func (s *stack) slowlog(from, to time.Time) string {
	t := s.t
	t.Helper()
	logs, err := s.rdb.SlowLogGet(ctxFor(t, 10*time.Second), 1024).Result()
	require.NoError(t, err)
	var parts []string
	for _, l := range logs {
		if l.Time.Before(from.Truncate(time.Second)) || l.Time.After(to) || len(l.Args) == 0 {
			continue
		}
		name := l.Args[0]
		if strings.EqualFold(name, "evalsha") && len(l.Args) > 3 {
			name += "(" + l.Args[3] + ")" // the script's first key says which it is
		}
		parts = append(parts, fmt.Sprintf("%s:%.1f", name, ms(l.Duration)))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ",")
}

// reasons are popup-api's counts of its degraded answers by cause (popup_decisions_total's
// degraded_* outcomes) and of its failed Redis calls by operation (popup_redis_errors_total).
type reasons map[string]float64

func (s *stack) degradedReasons() reasons {
	r := reasons{}
	s.eachMetric(func(series string, v float64) {
		switch {
		case strings.HasPrefix(series, `popup_decisions_total{outcome="degraded_`):
			r[strings.TrimSuffix(strings.TrimPrefix(series, `popup_decisions_total{outcome="`), `"}`)] = v
		case strings.HasPrefix(series, `popup_redis_errors_total{op="`):
			r["redis_error_"+strings.TrimSuffix(strings.TrimPrefix(series, `popup_redis_errors_total{op="`), `"}`)] = v
		}
	})
	return r
}

// minus prints what r counted since before, as "name:n,..." ("0" for nothing).
func (r reasons) minus(before reasons) string {
	d := map[string]int{}
	for k, v := range r {
		if n := int(v - before[k]); n != 0 {
			d[k] = n
		}
	}
	return countList(d, "0")
}
