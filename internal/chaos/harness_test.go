//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

// plan holds the durations of one mode: fast (inside `make test`) or full (`make chaos`, the
// issue's figures).
type plan struct {
	mode          string
	steady        time.Duration // load before a fault and after recovery
	redisOutage   time.Duration // Redis stopped, hung or slow
	mysqlOutage   time.Duration // MariaDB stopped
	storm         time.Duration // worker SIGKILL storm
	aofLoad       time.Duration // event load before redis-server is SIGKILLed
	drainDeadline time.Duration // how long the backlog may take to reach MySQL afterwards
}

func loadPlan() (plan, error) {
	switch m := os.Getenv("POPUP_CHAOS"); m {
	case "", "fast":
		return plan{mode: "fast", steady: 1500 * time.Millisecond, redisOutage: 2 * time.Second,
			mysqlOutage: 5 * time.Second, storm: 10 * time.Second, aofLoad: 2 * time.Second, drainDeadline: time.Minute}, nil
	case "full":
		return plan{mode: "full", steady: 10 * time.Second, redisOutage: 30 * time.Second,
			mysqlOutage: 60 * time.Second, storm: 3 * time.Minute, aofLoad: 10 * time.Second, drainDeadline: 5 * time.Minute}, nil
	default:
		return plan{}, fmt.Errorf("POPUP_CHAOS=%q: want fast or full", m)
	}
}

// harness is what every scenario shares: the built binaries, one MariaDB (a database per
// scenario) and the directory where servers keep their data and logs.
type harness struct {
	plan    plan
	root    string // repository root
	dir     string // this run's data and logs
	api     string // popup-api binary
	worker  string // popup-worker binary
	mysql   *mariadb
	results string // file the summary lines are appended to ("" = none)
}

// h is set by TestMain before any test runs and never changed afterwards.
var h *harness

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// The scenarios restart MariaDB under the checks' connection pool: its notes are expected.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	hs, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos setup:", err)
		if hs != nil {
			hs.teardown()
		}
		return 1
	}
	h = hs
	code := m.Run()
	hs.teardown()
	if code == 0 && os.Getenv("POPUP_CHAOS_KEEP") == "" {
		os.RemoveAll(hs.dir)
	} else {
		fmt.Fprintln(os.Stderr, "chaos: logs kept in", hs.dir)
	}
	return code
}

func setup() (*harness, error) {
	p, err := loadPlan()
	if err != nil {
		return nil, err
	}
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		return nil, err
	}
	dir := os.Getenv("POPUP_CHAOS_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".testdata", fmt.Sprintf("chaos-%d", os.Getpid()))
	}
	hs := &harness{plan: p, root: root, dir: dir, results: os.Getenv("POPUP_CHAOS_RESULTS")}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	hs.api, hs.worker = filepath.Join(dir, "bin", "popup-api"), filepath.Join(dir, "bin", "popup-worker")
	for bin, pkg := range map[string]string{hs.api: "./cmd/popup-api", hs.worker: "./cmd/popup-worker"} {
		// no -trimpath: the packages compiled for the rest of `make test` are reused from the cache
		cmd := exec.Command("go", append(append([]string{"build"}, testenv.BuildFlags()...), "-o", bin, pkg)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	// POPUP_CHAOS_API_BIN runs the scenarios against another popup-api build (before/after a fix).
	if alt := os.Getenv("POPUP_CHAOS_API_BIN"); alt != "" {
		hs.api = alt
	}
	for _, b := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, fmt.Errorf("%s not found: run scripts/services.sh install (scripts/chaos.sh does)", b)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	hs.mysql = &mariadb{dir: filepath.Join(dir, "mysql"), port: port, script: filepath.Join(root, "scripts", "services.sh")}
	if err := hs.mysql.start(); err != nil {
		return hs, err
	}
	fmt.Printf("chaos: mode=%s dir=%s mariadb=127.0.0.1:%d setup=%s\n", p.mode, dir, port, time.Since(start).Round(100*time.Millisecond))
	return hs, nil
}

func (hs *harness) teardown() {
	if hs.mysql != nil {
		if err := hs.mysql.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: stop mariadb:", err)
		}
	}
}

// summary prints a scenario's one-line figures and appends them to the results file.
func summary(t *testing.T, name string, kv ...any) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "CHAOS %s mode=%s", name, h.plan.mode)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	line := b.String()
	fmt.Println(line)
	if h.results == "" {
		return
	}
	f, err := os.OpenFile(h.results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	require.NoError(t, err)
}

// freePort returns a port that is free now, below the kernel's ephemeral range when there is
// room: a port from that range (what ":0" hands out) can be taken meanwhile by any outgoing
// connection, and the scenarios restart servers on their ports while load runs. Ports below
// ip_local_port_range are never picked for connect(), so only a listener could take them.
// No port is handed out twice in one run (two picks in a row could otherwise be equal).
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	if lo := ephemeralLow(); lo > 2048 {
		first := max(1024, lo-16384)
		for range 64 {
			p := first + rand.IntN(lo-first)
			if portsGiven[p] {
				continue
			}
			if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				ln.Close()
				portsGiven[p] = true
				return p, nil
			}
		}
	}
	for range 64 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !portsGiven[p] {
			portsGiven[p] = true
			return p, nil
		}
	}
	return 0, errors.New("no free port found")
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// ephemeralLow is the first port of net.ipv4.ip_local_port_range, 0 if unknown.
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	lo, _ := strconv.Atoi(f[0])
	return lo
}

func mustPort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	require.NoError(t, err)
	return p
}

// gone reports whether pid has exited. A zombie counts as gone: servers started through
// services.sh are not our children, and this machine's init reaps orphans only now and then.
func gone(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// mariadb is the run's MariaDB, started by scripts/services.sh (which initialises its data
// directory on first use) and stopped and restarted by PID.
type mariadb struct {
	dir, script string
	port        int
}

// DSN returns the DSN of database db ("" = none) for the popup user services.sh creates.
func (m *mariadb) DSN(db string) string {
	return fmt.Sprintf("popup:popup@tcp(127.0.0.1:%d)/%s", m.port, db)
}

func (m *mariadb) start() error {
	cmd := exec.Command(m.script, "start-mariadb", m.dir, strconv.Itoa(m.port))
	cmd.Env = append(os.Environ(), "POPUP_MARIADB_FLUSH=2", "POPUP_MARIADB_BUFFER_POOL=128M")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start mariadb: %v\n%s", err, out)
	}
	return nil
}

func (m *mariadb) pid() (int, error) {
	raw, err := os.ReadFile(filepath.Join(m.dir, "mariadb.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// stop shuts MariaDB down cleanly (SIGTERM) and waits for it to exit; it removes the PID file
// so that services.sh starts it again rather than mistaking a zombie for a live server.
func (m *mariadb) stop() error {
	pid, err := m.pid()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("mariadb (pid %d) did not stop in 60 s; killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return os.Remove(filepath.Join(m.dir, "mariadb.pid"))
}

// redisServer is one scenario's redis-server, a child of the test process: AOF on, appendfsync
// as given ("off": no AOF), no RDB snapshots (the settings of scripts/services.sh). It can be
// killed and started again on the same port and data directory.
type redisServer struct {
	dir, fsync string
	port       int
	extra      []string // more redis-server arguments (replication, cluster)
	mu         sync.Mutex
	proc       *proc
}

func startRedis(t *testing.T, name, fsync string) *redisServer {
	t.Helper()
	return startRedisNode(t, filepath.Join(h.dir, name), fsync)
}

// startRedisNode starts a redis-server with its data and logs under dir and the extra arguments
// (a replica's --replicaof, a cluster node's settings); it is killed when the test ends.
func startRedisNode(t *testing.T, dir, fsync string, extra ...string) *redisServer {
	t.Helper()
	r := &redisServer{dir: dir, fsync: fsync, port: mustPort(t), extra: extra}
	require.NoError(t, os.MkdirAll(filepath.Join(r.dir, "redis"), 0o755))
	r.start(t)
	t.Cleanup(func() { r.signal(syscall.SIGKILL); r.wait(t) })
	return r
}

func (r *redisServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func (r *redisServer) start(t *testing.T) {
	t.Helper()
	persistence := []string{"--appendonly", "yes", "--appendfsync", r.fsync}
	if r.fsync == "off" {
		persistence = []string{"--appendonly", "no"}
	}
	args := append([]string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", filepath.Join(r.dir, "redis"),
		"--daemonize", "no", "--save", "", "--logfile", filepath.Join(r.dir, "redis.log")}, persistence...)
	args = append(args, r.extra...)
	p := startProc(t, "redis-server", filepath.Join(r.dir, "redis-stdout.log"), "redis-server", nil, args...)
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := exec.Command("redis-cli", "-p", strconv.Itoa(r.port), "ping").Output()
		if err == nil && strings.TrimSpace(string(out)) == "PONG" {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("redis-server exited at start: %v; see %s", p.err, filepath.Join(r.dir, "redis.log"))
		default:
		}
		require.False(t, time.Now().After(deadline), "redis-server did not answer PING in 15 s")
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *redisServer) signal(sig syscall.Signal) {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	p.signal(sig)
}

func (r *redisServer) wait(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	p.waitExit(t, 30*time.Second)
}

// proc is a child process of the test; it dies with the test process (Pdeathsig).
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProc(t *testing.T, name, logPath, bin string, env []string, args ...string) *proc {
	t.Helper()
	p, err := spawn(name, logPath, bin, env, args...)
	require.NoError(t, err)
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
	})
	return p
}

func spawn(name, logPath, bin string, env []string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) waitExit(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s (pid %d) did not exit within %s", p.name, p.pid(), within)
	}
}

// killedBy reports whether p died of sig.
func (p *proc) killedBy(sig syscall.Signal) bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// tail returns the last n lines of a log file, for failure messages.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// ctxFor is a context for a bounded setup or check step of a test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
