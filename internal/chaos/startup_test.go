//go:build chaos

package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartDuringMySQLOutage: MariaDB is down while popup-api and popup-worker are (re)started,
// as in a deploy or a node restart during a database outage. Neither binary may exit: the API
// becomes ready from the Redis config cache and answers known users normally (their state is in
// Redis: every GET 200, not degraded beyond chance against a control window of the same load
// before the restart, as in TestMySQLStopped), the worker waits and says so on /healthz. Once
// MariaDB is back the worker drains the backlog and every acknowledged event is in
// popup_action_log once.
func TestStartDuringMySQLOutage(t *testing.T) {
	s := newStack(t, "start-during-outage", "everysec")
	worker, _ := s.startWorker()
	s.startAPI(s.redis.Addr())
	s.seed()
	rec := newRecorder()
	s.warm(rec, steadyLoad)
	s.waitDrained(h.plan.drainDeadline) // the users are known to both stores
	// The control window: the same load on the same machine, MariaDB up.
	ctrlAt := rec.now()
	stopCtrl := s.run(rec, steadyLoad)
	time.Sleep(h.plan.steady)
	ctrlEnd := rec.now()
	stopCtrl()
	for _, p := range []*proc{s.api, worker} {
		p.signal(syscall.SIGTERM)
		p.waitExit(t, 30*time.Second)
	}

	downAt := time.Now()
	require.NoError(t, h.mysql.stop())
	workerAddr := fmt.Sprintf("127.0.0.1:%d", mustPort(t))
	worker, workerLog := s.startWorker("POPUP_WORKER_ADDR=" + workerAddr)
	apiStart := time.Now()
	s.startAPI(s.redis.Addr()) // waits for /readyz 200
	readyIn := time.Since(apiStart)
	loadAt := rec.now()
	stopLoad := s.run(rec, steadyLoad)
	defer stopLoad()
	time.Sleep(h.plan.mysqlOutage)
	during := rec.now()
	waiting := workerHealth(t, workerAddr)
	require.False(t, s.api.exited(), "popup-api exited during the outage:\n%s", tail(s.apiLog, 20))
	require.False(t, worker.exited(), "popup-worker exited during the outage:\n%s", tail(workerLog, 20))

	upAt := time.Now()
	require.NoError(t, h.mysql.start())
	drainedIn := s.waitBacklogBelow(caughtUpBacklog, h.plan.drainDeadline)
	stopLoad()
	final := s.waitDrained(h.plan.drainDeadline)
	healed := workerHealth(t, workerAddr)
	c := s.verify(rec)
	gets, acts := tallyOf(rec.window(kindGet, loadAt, during)), tallyOf(rec.window(kindAction, loadAt, during))
	ctrlGets, ctrlActs := tallyOf(rec.window(kindGet, ctrlAt, ctrlEnd)), tallyOf(rec.window(kindAction, ctrlAt, ctrlEnd))
	summary(t, "start-during-outage",
		"down_s", fmt.Sprintf("%.1f", upAt.Sub(downAt).Seconds()), "api_ready_ms", readyIn.Milliseconds(),
		"worker_health", waiting.Status+"/"+fmt.Sprint(waiting.WaitingFor), "gets", gets.n, "get_status", gets.statusList(),
		"degraded", gets.degraded, "get_errors", gets.errList(), "actions", acts.n, "action_status", acts.statusList(),
		"control_not_normal", fmt.Sprintf("%d/%d,%d/%d", ctrlGets.n-ctrlGets.ok, ctrlGets.n, ctrlActs.n-ctrlActs.ok, ctrlActs.n),
		"caught_up_after_restart_s", fmt.Sprintf("%.1f", drainedIn.Seconds()), "final_drain_ms", final.Milliseconds(),
		"acked", c.acked, "lost", c.lost, "unacked_applied", c.unacked, "dup_rows", c.dupRows, "state_mismatch", c.stateDiff, "stats_mismatch", c.statsDiff, "dead_lettered", c.dead)

	assert.Equal(t, http.StatusOK, waiting.Code, "the waiting worker is alive")
	assert.Equal(t, []string{"mysql"}, waiting.WaitingFor)
	assert.Equal(t, "ok", healed.Status)
	assert.Equal(t, gets.n, gets.statuses[http.StatusOK], "every GET answers 200")
	assert.Equal(t, acts.n, acts.statuses[http.StatusAccepted]+acts.status503, "actions answer 202 or 503, nothing else")
	assert.Equal(t, acts.status503, acts.retryAfter, "a 503 without Retry-After")
	assertNotBeyondChance(t, "requests of known users while MySQL is down", rec, span{loadAt, during}, span{ctrlAt, ctrlEnd})
	c.requireNoLoss(t)
}

// workerHealthz is popup-worker's /healthz answer.
type workerHealthz struct {
	Code       int
	Status     string   `json:"status"`
	WaitingFor []string `json:"waiting_for"`
}

func workerHealth(t *testing.T, addr string) workerHealthz {
	t.Helper()
	res, err := ctl.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var w workerHealthz
	require.NoError(t, json.Unmarshal(raw, &w), string(raw))
	w.Code = res.StatusCode
	return w
}
