package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// workerBinary builds popup-worker once per test run, into a temporary directory.
func workerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "popup-worker-test-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "popup-worker")
		// go test puts its own go first on the test binary's PATH.
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		out, err := exec.Command(goTool, append(append([]string{"build"}, testenv.BuildFlags()...), "-o", binPath, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// workerEnv is the environment of a worker process under test.
type workerEnv struct {
	dsn, prefix  string
	redisAddr    string
	redisCluster bool
	shards       int
}

func newWorkerEnv(t *testing.T, shards int) workerEnv {
	t.Helper()
	return newWorkerEnvDSN(t, testenv.MySQLDSN(t, true), shards)
}

// newWorkerEnvDSN is newWorkerEnv with a database of the caller's.
func newWorkerEnvDSN(t *testing.T, dsn string, shards int) workerEnv {
	t.Helper()
	return workerEnv{dsn: dsn, prefix: testenv.RedisPrefix(t), redisAddr: testenv.RedisAddr(t), redisCluster: testenv.RedisCluster(t), shards: shards}
}

func (w workerEnv) with(vars ...string) []string {
	base := []string{
		"POPUP_MYSQL_DSN=" + w.dsn,
		"POPUP_REDIS_ADDR=" + w.redisAddr,
		"POPUP_REDIS_CLUSTER=" + strconv.FormatBool(w.redisCluster),
		"POPUP_REDIS_PREFIX=" + w.prefix,
		fmt.Sprintf("POPUP_QUEUE_SHARDS=%d", w.shards),
		"POPUP_WORKER_ADDR=127.0.0.1:0",
		"POPUP_WORKER_LEASE=1s",
		"POPUP_WORKER_BATCH_SIZE=200",
		"POPUP_WORKER_FLUSH_INTERVAL=10ms",
		"POPUP_WARM_INTERVAL=1h",
		"POPUP_SHUTDOWN_TIMEOUT=5s",
		"POPUP_LOG_LEVEL=info",
		"POPUP_WORKER_FAILPOINT=",
		"POPUP_ACTION_LOG_RETENTION=876000h", // the test events are dated 2026-03: the purge keeps them
	}
	// Later entries win: the test's settings over the caller's environment.
	return append(append(os.Environ(), base...), vars...)
}

func (w workerEnv) keys() redisstore.Keys { return redisstore.Keys{Prefix: w.prefix, Shards: w.shards} }

// logSink collects every worker process's stderr and shows its tail when the test fails.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newLogSink(t *testing.T) *logSink {
	l := &logSink{}
	t.Cleanup(func() {
		if t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			lines := strings.Split(l.buf.String(), "\n")
			t.Logf("last worker log lines:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
	return l
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// proc is one worker process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startWorker(t *testing.T, env []string, logs io.Writer, args ...string) *proc {
	t.Helper()
	p, err := spawnWorker(t, workerBinary(t), env, logs, args...)
	require.NoError(t, err)
	return p
}

// spawnWorker starts the worker binary; safe to call from any goroutine of the test. The process
// is killed when the test ends, if it still runs.
func spawnWorker(t *testing.T, bin string, env []string, logs io.Writer, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = logs
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p, nil
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// waitExit waits for the process to end, bounded, and returns its wait status.
func (p *proc) waitExit(t *testing.T, within time.Duration) syscall.WaitStatus {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("worker did not exit within %s", within)
	}
	return p.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := mysqlstore.Open(ctx, dsn, 4)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mkEvent(i int) event.Event {
	actions := []event.Action{event.Impression, event.Click, event.Close}
	// Spread over four UTC days, so the daily stats have several rows per popup.
	at := t0.Add(time.Duration(i)*time.Millisecond + time.Duration(i%4)*24*time.Hour)
	return event.Event{
		ID: fmt.Sprintf("crash-%06d", i), UID: fmt.Sprintf("u%d", i%997), PopupID: int64(1 + i%7),
		Action: actions[i%3], At: at, NextShowAt: at.Add(time.Duration(i%5000) * time.Second), Impressions: i % 1013,
	}
}

// drained reports whether the log holds total rows and no queue or processing list holds events.
func drained(t *testing.T, rdb redis.UniversalClient, db *sql.DB, keys redisstore.Keys, total int) bool {
	t.Helper()
	ctx := context.Background()
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM popup_action_log").Scan(&n))
	if n < total {
		return false
	}
	for shard := range keys.Shards {
		qlen, err := rdb.LLen(ctx, keys.Queue(shard)).Result()
		require.NoError(t, err)
		procs, err := testenv.RedisKeys(ctx, rdb, keys.Processing(shard, "*"))
		require.NoError(t, err)
		if qlen > 0 || len(procs) > 0 {
			return false
		}
	}
	return true
}

func requireExactlyOnce(t *testing.T, db *sql.DB, ids []string) {
	t.Helper()
	rows, err := db.Query("SELECT event_id FROM popup_action_log")
	require.NoError(t, err)
	defer rows.Close()
	seen := make(map[string]int, len(ids))
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		seen[id]++
	}
	require.NoError(t, rows.Err())
	var missing []string
	for _, id := range ids {
		if seen[id] != 1 {
			missing = append(missing, fmt.Sprintf("%s×%d", id, seen[id]))
		}
	}
	require.Empty(t, missing, "events not in the log exactly once")
	require.Len(t, seen, len(ids), "no unexpected events")
}

func TestWorkerRefusesAnUnmigratedSchema(t *testing.T) {
	t.Parallel()
	w := newWorkerEnvDSN(t, testenv.MySQLDSN(t, false), 1)
	logs := newLogSink(t)

	p := startWorker(t, w.with(), logs)
	ws := p.waitExit(t, 20*time.Second)

	assert.NotZero(t, ws.ExitStatus())
	assert.Contains(t, logs.String(), "run `popup-worker migrate`")
}

func TestWorkerMigrateIsSafeToRunTwice(t *testing.T) {
	t.Parallel()
	w := newWorkerEnvDSN(t, testenv.MySQLDSN(t, false), 1)

	first, err := runWorker(t, w.with(), "migrate")
	require.NoError(t, err, first)
	second, err := runWorker(t, w.with(), "migrate")
	require.NoError(t, err, second)

	assert.Contains(t, first, "applied migration 00001")
	assert.Contains(t, first, "applied migration 00002")
	assert.Contains(t, first, "applied migration 00004")
	assert.Contains(t, first, "applied migration 00005")
	_, latest, err := mysqlstore.SchemaVersions(context.Background(), openDB(t, w.dsn))
	require.NoError(t, err)
	assert.Contains(t, second, "schema is up to date at version "+strconv.FormatInt(latest, 10))
	require.NoError(t, mysqlstore.CheckSchema(context.Background(), openDB(t, w.dsn)))
}

func TestWorkerServesHealthMetricsWarmsTheCacheAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	w := newWorkerEnv(t, 2)
	addr := freeAddr(t)
	logs := newLogSink(t)
	rdb := testenv.Redis(t)
	keys := w.keys()
	p := startWorker(t, w.with("POPUP_WORKER_ADDR="+addr), logs)
	ev := mkEvent(1)
	require.NoError(t, rdb.RPush(context.Background(), keys.Queue(keys.Shard(ev.UID)), event.Append(nil, &ev)).Err())

	waitHealthy(t, addr)
	var metrics []byte
	require.Eventually(t, func() bool {
		metrics = scrape(addr)
		return bytes.Contains(metrics, []byte(`popup_worker_rows_written_total{table="popup_action_log"} 1`))
	}, 10*time.Second, 20*time.Millisecond)
	h := getHealth(t, addr) // the worker has drained: both dependencies answered
	// The warm at start runs beside the drain (workerserver's warmLoop), not before it: under load
	// the drain's first row came first once, so the test waits for the warm itself.
	var version string
	require.Eventually(t, func() bool {
		v, err := rdb.Get(context.Background(), keys.ConfigVersion()).Result()
		version = v
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the worker warms the config cache at start")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	ws := p.waitExit(t, 20*time.Second)

	assert.Equal(t, health{Code: http.StatusOK, Status: "ok"}, h)
	assert.Equal(t, "1", version)
	assert.Equal(t, 0, ws.ExitStatus())
	for _, name := range []string{"popup_queue_length", "popup_queue_oldest_event_age_seconds", "popup_queue_processing_length",
		"popup_queue_dead_letter_length", "popup_worker_batches_total", "popup_worker_rows_written_total",
		"popup_worker_dead_letters_total", "popup_worker_batch_duration_seconds_bucket", "popup_mysql_errors_total", "popup_dependency_up"} {
		assert.Contains(t, string(metrics), name+"{", "metric %s", name)
	}
	// what the alert rules watch (deploy/prometheus): pending erasures, the retention's last run
	for _, name := range []string{"popup_erasures_pending", "popup_erasure_oldest_pending_age_seconds",
		"popup_worker_action_log_maintained_timestamp_seconds"} {
		assert.Contains(t, string(metrics), "\n"+name+" ", "metric %s", name)
	}
	if !w.redisCluster { // (the cluster pass runs this test on a Cluster, which has the gauge)
		assert.NotContains(t, string(metrics), "popup_redis_cluster_full_coverage_nodes", "not a cluster: no coverage gauge")
	}
}

// TestWorkerWarnsOfAClusterRequiringFullCoverage: popup-worker on a Redis Cluster whose nodes keep
// the server's default cluster-require-full-coverage yes logs a warning naming the setting and
// what it costs, and exports the number of such nodes for the alert rules.
func TestWorkerWarnsOfAClusterRequiringFullCoverage(t *testing.T) {
	t.Parallel()
	nodes := testenv.StartRedisCluster(t, 3, "--cluster-require-full-coverage", "yes")
	w := newWorkerEnv(t, 16)
	w.redisAddr, w.redisCluster = nodes[0].Addr+","+nodes[1].Addr+","+nodes[2].Addr, true
	addr := freeAddr(t)
	logs := newLogSink(t)
	p := startWorker(t, w.with("POPUP_WORKER_ADDR="+addr), logs)
	waitHealthy(t, addr)
	require.Eventually(t, func() bool {
		return bytes.Contains(scrape(addr), []byte("\npopup_redis_cluster_full_coverage_nodes 3\n"))
	}, 15*time.Second, 50*time.Millisecond, "the coverage gauge")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	p.waitExit(t, 20*time.Second)
	warning := logs.String()
	assert.Contains(t, warning, "cluster-require-full-coverage is yes")
	assert.Contains(t, warning, "every user's GET degrades")
	for _, n := range nodes {
		assert.Contains(t, warning, n.Addr)
	}
}

func TestParseFailpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give    string
		wantSet bool
		wantErr string
	}{
		{give: "", wantSet: false},
		{give: "after-commit-before-ack", wantSet: true},
		{give: "after-commit-before-ack:0.05", wantSet: true},
		{give: "after-commit-before-ack:2", wantErr: "bad probability"},
		{give: "before-lunch", wantErr: "unknown failpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			fp, err := parseFailpoint(tt.give)

			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantSet, fp != nil)
		})
	}
}

func TestRunRejectsAnUnknownCommand(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"frobnicate"}, io.Discard)

	var ue usageError
	assert.ErrorAs(t, err, &ue)
}

// waitHealthy waits until the worker at addr answers /healthz with 200 and returns the body.
func waitHealthy(t *testing.T, addr string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "worker at %s not healthy", addr)
	return body
}

func scrape(addr string) []byte {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// runWorker runs the binary to completion and returns its combined output.
func runWorker(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	bin := workerBinary(t) // built before the clock starts: a cold build may take a minute
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
