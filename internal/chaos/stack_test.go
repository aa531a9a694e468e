//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
)

const adminToken = "chaos-admin-token"

// ctl is the harness's own client for readiness, seeding and metrics: no keep-alive, so that it
// never holds a connection of the API that a scenario counts or drains.
var ctl = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// stack is one scenario's deployment: its own redis-server and database, popup-api and any number
// of popup-worker processes, each a real binary.
type stack struct {
	t       *testing.T
	name    string
	dir     string
	dsn     string
	db      *sql.DB
	redis   *redisServer // nil for a Sentinel or Cluster topology
	rdb     redis.UniversalClient
	keys    redisstore.Keys
	api     *proc
	apiLog  string
	public  string // http://host:port of the public listener
	admin   string // http://host:port of the admin listener
	popupID int64
	env     []string // common POPUP_* settings of both binaries
	workerN int
}

// newStack starts redis-server (AOF with fsync), creates and migrates a database of its own and
// prepares the environment of both binaries; it starts neither.
func newStack(t *testing.T, name, fsync string) *stack {
	t.Helper()
	r := startRedis(t, name, fsync)
	s := newStackOn(t, name, redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1}), stackKeys, "POPUP_REDIS_ADDR="+r.Addr())
	s.redis = r
	return s
}

// newStackOn is newStack for a Redis the scenario started itself (a Sentinel or Cluster
// topology): rdb is the harness's client of it, keys the services' key layout there, and
// redisEnv the POPUP_REDIS_* settings that point both binaries at it.
func newStackOn(t *testing.T, name string, rdb redis.UniversalClient, keys redisstore.Keys, redisEnv ...string) *stack {
	t.Helper()
	s := &stack{t: t, name: name, dir: filepath.Join(h.dir, name), rdb: rdb, keys: keys}
	require.NoError(t, os.MkdirAll(s.dir, 0o755))
	t.Cleanup(func() { s.rdb.Close() })

	dbName := "chaos_" + strings.ReplaceAll(name, "-", "_")
	ctx := ctxFor(t, 60*time.Second)
	admin, err := mysqlstore.Open(ctx, h.mysql.DSN(""), 2)
	require.NoError(t, err)
	_, err = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+dbName)
	require.NoError(t, err)
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+dbName+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	require.NoError(t, err)
	admin.Close()
	s.dsn = h.mysql.DSN(dbName)
	s.db, err = mysqlstore.Open(ctx, s.dsn, 4)
	require.NoError(t, err)
	t.Cleanup(func() { s.db.Close() })

	s.env = append([]string{"POPUP_MYSQL_DSN=" + s.dsn, "POPUP_ADMIN_TOKEN=" + adminToken,
		"POPUP_LOG_LEVEL=info", "POPUP_WORKER_LEASE=2s", "POPUP_WORKER_FLUSH_INTERVAL=100ms"}, redisEnv...)
	out, err := execEnv(h.worker, s.env, "migrate")
	require.NoError(t, err, out)
	return s
}

func execEnv(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startAPI starts popup-api with Redis at redisAddr (the server itself or a proxy in front of it)
// and waits until it is ready. Extra environment entries override the stack's.
func (s *stack) startAPI(redisAddr string, extra ...string) {
	t := s.t
	t.Helper()
	pub, adm := mustPort(t), mustPort(t)
	s.public, s.admin = fmt.Sprintf("http://127.0.0.1:%d", pub), fmt.Sprintf("http://127.0.0.1:%d", adm)
	env := append(append([]string{}, s.env...), "POPUP_REDIS_ADDR="+redisAddr,
		fmt.Sprintf("POPUP_HTTP_ADDR=127.0.0.1:%d", pub), fmt.Sprintf("POPUP_ADMIN_ADDR=127.0.0.1:%d", adm))
	env = append(env, extra...)
	s.apiLog = filepath.Join(s.dir, "api.log")
	s.api = startProc(t, "popup-api", s.apiLog, h.api, env)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := ctl.Get(s.public + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if s.api.exited() {
			t.Fatalf("popup-api exited at start: %v\n%s", s.api.err, tail(s.apiLog, 20))
		}
		require.False(t, time.Now().After(deadline), "popup-api not ready in 30 s:\n%s", tail(s.apiLog, 20))
		time.Sleep(50 * time.Millisecond)
	}
}

// startWorker starts one popup-worker process; its log goes to worker-N.log.
func (s *stack) startWorker(extra ...string) (*proc, string) {
	t := s.t
	t.Helper()
	s.workerN++
	log := filepath.Join(s.dir, fmt.Sprintf("worker-%d.log", s.workerN))
	env := append(append([]string{}, s.env...), fmt.Sprintf("POPUP_WORKER_ADDR=127.0.0.1:%d", mustPort(t)))
	env = append(env, extra...)
	return startProc(t, "popup-worker", log, h.worker, env), log
}

// seed creates the scenario's popup: shown to everyone on every request (reshow 0), so that
// every GET of a warm user is an impression event.
func (s *stack) seed() {
	t := s.t
	t.Helper()
	body := `{"name":"chaos","priority":10,"reshow_after_seconds":0,"title":"Chaos","content":"chaos scenario popup"}`
	req, err := http.NewRequest(http.MethodPost, s.admin+"/admin/v1/popups", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := ctl.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusCreated, res.StatusCode, string(raw))
	var p struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(raw, &p))
	s.popupID = p.ID
}

// procStats are popup-api's own figures from its admin /metrics.
type procStats struct {
	goroutines int
	rssMB      float64
	heapMB     float64
}

func (p procStats) String() string {
	return fmt.Sprintf("%d/%.1f/%.1f", p.goroutines, p.rssMB, p.heapMB)
}

func (s *stack) apiStats() procStats {
	t := s.t
	t.Helper()
	var st procStats
	s.eachMetric(func(series string, v float64) {
		switch series {
		case "go_goroutines":
			st.goroutines = int(v)
		case "process_resident_memory_bytes":
			st.rssMB = v / (1 << 20)
		case "go_memstats_heap_inuse_bytes":
			st.heapMB = v / (1 << 20)
		}
	})
	require.NotZero(t, st.goroutines, "go_goroutines missing from /metrics")
	return st
}

// eachMetric calls fn with every sample of popup-api's admin /metrics: the series (name and
// labels, as written) and its value.
func (s *stack) eachMetric(fn func(series string, v float64)) {
	t := s.t
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.admin+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := ctl.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			fn(line[:i], v)
		}
	}
	require.NoError(t, sc.Err())
}

// traceAPI, with POPUP_CHAOS_TRACE=1, records a runtime trace of popup-api for d into the
// scenario's directory (api-trace.out; `go tool trace` reads it, POPUP_CHAOS_KEEP=1 keeps it): where
// a GET's time goes beyond its budget (scheduling, GC, a call after the budget). The returned
// function waits for the trace. Without POPUP_CHAOS_TRACE it does nothing.
func (s *stack) traceAPI(d time.Duration) (wait func()) {
	if os.Getenv("POPUP_CHAOS_TRACE") != "1" {
		return func() {}
	}
	t := s.t
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", s.admin, max(int(d.Seconds()), 1))
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Errorf("trace: %v", err)
			return
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		c := &http.Client{Timeout: d + 30*time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		res, err := c.Do(req)
		if err != nil {
			t.Errorf("trace: %v", err)
			return
		}
		defer res.Body.Close()
		f, err := os.Create(filepath.Join(s.dir, "api-trace.out"))
		if err != nil {
			t.Errorf("trace: %v", err)
			return
		}
		defer f.Close()
		if _, err := io.Copy(f, res.Body); err != nil {
			t.Errorf("trace: %v", err)
		}
	}()
	return func() { <-done }
}

// slowGets is how many GETs popup-api itself timed above 100 ms (its request duration histogram,
// which times the handler from routing to the answer written).
func (s *stack) slowGets() int {
	s.t.Helper()
	var count, within float64
	s.eachMetric(func(series string, v float64) {
		if !strings.Contains(series, `route="/api/v1/popup"`) {
			return
		}
		switch {
		case strings.HasPrefix(series, "popup_http_request_duration_seconds_count"):
			count += v
		case strings.HasPrefix(series, "popup_http_request_duration_seconds_bucket") && strings.Contains(series, `le="0.1"`):
			within += v
		}
	})
	return int(count - within)
}

// backlog is what the queue holds, over every shard: waiting plus claimed and not yet
// acknowledged.
func (s *stack) backlog(ctx context.Context) (int64, error) {
	q := redisstore.NewQueue(s.rdb, s.keys, 2*time.Second)
	var n int64
	for shard := range s.keys.Shards {
		st, err := q.Stats(ctx, shard)
		if err != nil {
			return 0, err
		}
		n += st.Length + st.ProcessingTotal()
	}
	return n, nil
}

// waitDrained waits until the queue is empty (nothing waiting, nothing claimed) and returns how
// long that took.
func (s *stack) waitDrained(within time.Duration) time.Duration {
	s.t.Helper()
	return s.waitBacklogBelow(1, within)
}

// waitBacklogBelow waits until the queue holds fewer than n events (waiting plus claimed) and
// returns how long that took. Under load the queue is never quite empty: the events of the last
// few milliseconds are on their way, so catching up after an outage means falling below n.
func (s *stack) waitBacklogBelow(n int64, within time.Duration) time.Duration {
	t := s.t
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	var last int64 = -1
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		got, err := s.backlog(ctx)
		cancel()
		if err == nil && got < n {
			return time.Since(start)
		}
		last, lastErr = got, err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("queue not below %d events within %s: %d left (err %v)", n, within, last, lastErr)
	return 0
}

// check compares what the clients were told (acknowledged event ids) with MySQL once the queue is
// drained.
// stackKeys are the Redis keys of a stack's services: the default prefix and queue shards.
var stackKeys = redisstore.Keys{Prefix: "popup", Shards: 1}

type check struct {
	acked     int // acknowledged events: impressions answered with a popup, actions answered 202
	lost      int // acknowledged, not in popup_action_log
	unacked   int // in popup_action_log, never acknowledged (the client saw an error or a degraded answer)
	dupRows   int // action log rows beyond one per event_id
	stateDiff int // (uid, popup) rows whose impressions count differs from its logged impressions
	statsDiff int // (popup, day) rows of popup_daily_stats that differ from a count of the log
	dead      int // events dead-lettered (docs/RELIABILITY.md: none in any scenario)
	rows      int // popup_action_log rows
}

func (s *stack) verify(rec *recorder) check {
	t := s.t
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	acked := rec.ackedIDs()
	var c check
	c.acked = len(acked)
	rows, err := s.db.QueryContext(ctx, "SELECT event_id FROM popup_action_log")
	require.NoError(t, err)
	seen := make(map[string]int, len(acked))
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		seen[id]++
		c.rows++
	}
	require.NoError(t, rows.Err())
	rows.Close()
	for id := range acked {
		if seen[id] == 0 {
			c.lost++
		}
	}
	for id, n := range seen {
		if _, ok := acked[id]; !ok {
			c.unacked++
		}
		c.dupRows += n - 1
	}
	// Each impression event carries the user's impression count after it; the state row keeps the
	// maximum. An impression applied twice, or one count given to two impressions, shows here.
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_user_state s
		LEFT JOIN (SELECT uid, popup_id, COUNT(*) n FROM popup_action_log WHERE action = 'impression' GROUP BY uid, popup_id) l
		  ON l.uid = s.uid AND l.popup_id = s.popup_id
		WHERE s.impressions <> COALESCE(l.n, 0)`).Scan(&c.stateDiff)
	require.NoError(t, err)
	// The daily rollup is written in the same transaction as the log: a batch redelivered after
	// a crash between commit and acknowledgement must not count twice there either.
	fromLog := s.dailyCounts(ctx, `SELECT CONCAT(popup_id, '/', DATE(event_at)), SUM(action = 'impression'), SUM(action = 'click'), SUM(action = 'close')
		FROM popup_action_log GROUP BY popup_id, DATE(event_at)`)
	stats := s.dailyCounts(ctx, `SELECT CONCAT(popup_id, '/', day), impressions, clicks, closes FROM popup_daily_stats`)
	for k, v := range fromLog {
		if stats[k] != v {
			c.statsDiff++
		}
	}
	for k := range stats {
		if _, ok := fromLog[k]; !ok {
			c.statsDiff++
		}
	}
	for shard := range s.keys.Shards {
		dead, err := s.rdb.LLen(ctx, s.keys.Dead(shard)).Result()
		require.NoError(t, err)
		c.dead += int(dead)
	}
	return c
}

// dailyCounts reads (popup/day → impressions, clicks, closes) rows.
func (s *stack) dailyCounts(ctx context.Context, query string) map[string][3]int64 {
	t := s.t
	t.Helper()
	rows, err := s.db.QueryContext(ctx, query)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string][3]int64{}
	for rows.Next() {
		var key string
		var n [3]int64
		require.NoError(t, rows.Scan(&key, &n[0], &n[1], &n[2]))
		out[key] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// requireNoLoss asserts docs/CONTRACT.md §6: every acknowledged event is in the action log, once.
func (c check) requireNoLoss(t *testing.T) {
	t.Helper()
	require.Positive(t, c.acked, "the scenario acknowledged no events: the load did not run")
	require.Zero(t, c.lost, "acknowledged events missing from popup_action_log")
	require.Zero(t, c.dupRows, "event ids logged more than once")
	require.Zero(t, c.stateDiff, "popup_user_state impressions differ from the logged impressions")
	require.Zero(t, c.statsDiff, "popup_daily_stats rows differ from a count of popup_action_log")
	require.Zero(t, c.dead, "events dead-lettered")
}
