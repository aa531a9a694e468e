//go:build chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
// batches), while the API takes steady event load. docs/CONTRACT.md §6: a worker killed at any instant leaves
// every event written or still in Redis. Afterwards one clean worker drains; every acknowledged
// event must be in the action log once, and no impression counted twice.
func TestWorkerKillStorm(t *testing.T) {
	s := newStack(t, "worker-storm", "everysec")
	s.startAPI(s.redis.Addr())
	s.seed()
	rec := newRecorder()
	s.warm(rec, steadyLoad)

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

	stopLoad := s.run(rec, steadyLoad)
	defer stopLoad()
	time.Sleep(h.plan.storm)
	stopLoad()
	endStorm()
	require.Empty(t, unexpected, "workers failed other than by SIGKILL:\n%s", tail(stormLog, 20))

	_, cleanLog := s.startWorker()
	drain := s.waitDrained(h.plan.drainDeadline)
	c := s.verify(rec)
	gets := tallyOf(rec.window(kindGet, 0, rec.now()))
	acts := tallyOf(rec.window(kindAction, 0, rec.now()))
	reclaimedLists, reclaimedEvents := reclaims(t, stormLog, cleanLog)
	summary(t, "worker-storm",
		"storm_s", h.plan.storm.Seconds(), "worker_starts", starts.Load(), "sigkill_by_test", kills.Load(),
		"sigkill_after_commit_before_ack", selfKills.Load(), "reclaimed_lists", reclaimedLists, "reclaimed_events", reclaimedEvents,
		"gets", gets.n, "get_status", gets.statusList(), "actions", acts.n, "action_status", acts.statusList(),
		"acked", c.acked, "lost", c.lost, "dup_rows", c.dupRows, "state_mismatch", c.stateDiff, "stats_mismatch", c.statsDiff, "dead_lettered", c.dead, "unacked_applied", c.unacked,
		"final_drain_ms", drain.Milliseconds())

	assert.Equal(t, gets.n, gets.ok, "GETs failed during the storm")
	assert.Equal(t, acts.n, acts.ok, "actions failed during the storm")
	assert.Positive(t, kills.Load()+selfKills.Load(), "no worker was killed")
	c.requireNoLoss(t)
}

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
