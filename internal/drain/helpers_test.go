package drain_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/drain"
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// env is one test's queue, database and writer.
type env struct {
	t      testing.TB
	rdb    redis.UniversalClient
	keys   redisstore.Keys
	queue  *redisstore.Queue
	dsn    string
	db     *sql.DB // direct connection, for checks
	writer *mysqlstore.EventWriter
	reg    *prometheus.Registry
	m      *drain.Metrics
}

func newEnv(t testing.TB, shards int, lease time.Duration) *env {
	t.Helper()
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: shards}
	rdb := testenv.Redis(t)
	dsn := testenv.MySQLDSN(t, true)
	db := openDB(t, dsn)
	reg := prometheus.NewRegistry()
	m := drain.NewMetrics(reg)
	w := mysqlstore.NewEventWriter(db)
	w.OnRows = m.RowsWritten
	return &env{t: t, rdb: rdb, keys: keys, queue: redisstore.NewQueue(rdb, keys, lease), dsn: dsn, db: db, writer: w, reg: reg, m: m}
}

func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := mysqlstore.Open(ctx, dsn, 8)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func (e *env) config(worker string) drain.Config {
	return drain.Config{
		Worker: worker, Shards: e.keys.Shards, BatchSize: 200, FlushEvery: 20 * time.Millisecond,
		Lease: 2 * time.Second, Grace: 5 * time.Second, MaxBackoff: 200 * time.Millisecond,
	}
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

// running is a drain running in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func (e *env) start(sink drain.Sink, cfg drain.Config) *running {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	d := drain.New(e.queue, sink, cfg, testLogger(e.t), e.m)
	go func() { r.done <- d.Run(ctx) }()
	e.t.Cleanup(func() { r.stop(e.t) })
	return r
}

// stop cancels the drain and waits (bounded) for Run to return.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			require.NoError(t, err)
			close(r.done)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("drain did not stop within 15 s")
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// mkEvent is the i-th test event: a few hundred users, popups 1-5, growing state.
func mkEvent(prefix string, i int) event.Event {
	actions := []event.Action{event.Impression, event.Click, event.Close}
	at := t0.Add(time.Duration(i) * time.Millisecond)
	return event.Event{
		ID: fmt.Sprintf("%s-%06d", prefix, i), UID: fmt.Sprintf("u%d", i%300), PopupID: int64(1 + i%5),
		Action: actions[i%3], At: at, NextShowAt: at.Add(time.Hour), Impressions: i / 1000,
	}
}

// produce queues n events on their users' shards, as the API does, and returns their ids. Each
// edit, if any, changes event i before it is queued.
func (e *env) produce(prefix string, from, n int, edits ...func(ev *event.Event, i int)) []string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := make([]string, 0, n)
	pipe := e.rdb.Pipeline()
	for i := from; i < from+n; i++ {
		ev := mkEvent(prefix, i)
		for _, edit := range edits {
			edit(&ev, i)
		}
		pipe.RPush(ctx, e.keys.Queue(e.keys.Shard(ev.UID)), event.Append(nil, &ev))
		ids = append(ids, ev.ID)
		if pipe.Len() == 500 {
			_, err := pipe.Exec(ctx)
			require.NoError(e.t, err)
		}
	}
	_, err := pipe.Exec(ctx)
	require.NoError(e.t, err)
	return ids
}

// pushRaw queues raw payloads on shard.
func (e *env) pushRaw(shard int, raws ...string) {
	e.t.Helper()
	for _, r := range raws {
		require.NoError(e.t, e.rdb.RPush(context.Background(), e.keys.Queue(shard), r).Err())
	}
}

func (e *env) logCount() int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.QueryRow("SELECT COUNT(*) FROM popup_action_log").Scan(&n))
	return n
}

// waitLog waits until the action log holds want rows.
func (e *env) waitLog(want int, within time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := e.logCount()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("action log holds %d rows after %s, want %d", got, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireExactlyOnce checks that the action log holds exactly the given event ids, once each.
func (e *env) requireExactlyOnce(ids []string) {
	e.t.Helper()
	rows, err := e.db.Query("SELECT event_id FROM popup_action_log")
	require.NoError(e.t, err)
	defer rows.Close()
	seen := make(map[string]int, len(ids))
	for rows.Next() {
		var id string
		require.NoError(e.t, rows.Scan(&id))
		seen[id]++
	}
	require.NoError(e.t, rows.Err())
	var missing, dup, extra []string
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
		switch seen[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			dup = append(dup, id)
		}
	}
	for id := range seen {
		if !want[id] {
			extra = append(extra, id)
		}
	}
	require.Empty(e.t, missing, "%d events lost", len(missing))
	require.Empty(e.t, dup, "events written twice")
	require.Empty(e.t, extra, "unexpected events")
}

// requireQueueEmpty checks that no shard holds queued, claimed or registered leftovers.
func (e *env) requireQueueEmpty() {
	e.t.Helper()
	ctx := context.Background()
	for shard := range e.keys.Shards {
		st, err := e.queue.Stats(ctx, shard)
		require.NoError(e.t, err)
		require.Zero(e.t, st.Length, "shard %d queue", shard)
		require.Zero(e.t, st.ProcessingTotal(), "shard %d processing lists", shard)
		keys, err := testenv.RedisKeys(ctx, e.rdb, e.keys.Processing(shard, "*"))
		require.NoError(e.t, err)
		require.Empty(e.t, keys, "shard %d processing lists", shard)
	}
}

// queued counts the events waiting in Redis: in the queues and in the processing lists. Each
// shard is read in one atomic step (Queue.Stats) and no event moves between shards, so the sum is
// exact.
func (e *env) queued() int64 {
	e.t.Helper()
	var n int64
	for shard := range e.keys.Shards {
		st, err := e.queue.Stats(context.Background(), shard)
		require.NoError(e.t, err)
		n += st.Length + st.ProcessingTotal()
	}
	return n
}

// waitQueued waits until want events wait in Redis.
func (e *env) waitQueued(want int64, within time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := e.queued()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d events wait in Redis after %v, want %d", n, within, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) deadLetters() []redisstore.DeadEntry {
	e.t.Helper()
	var out []redisstore.DeadEntry
	for shard := range e.keys.Shards {
		d, err := e.queue.DeadLetters(context.Background(), shard, 1000)
		require.NoError(e.t, err)
		out = append(out, d...)
	}
	return out
}

// metric returns the value of the counter or gauge name with the given label value (any label).
func (e *env) metric(name, label string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, lp := range m.GetLabel() {
				match = match || lp.GetValue() == label
			}
			if match {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// proxy is a TCP proxy in front of MySQL that a test takes down and brings back, to play a
// database outage on loopback.
type proxy struct {
	t      testing.TB
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	p := &proxy{t: t, target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(up, c)
			go pipe(c, up)
		}
	})
}

// down refuses new connections and cuts every open one.
func (p *proxy) down() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// up listens on the same address again.
func (p *proxy) up() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port may linger a moment after the close
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(p.t, err)
	p.serve(ln)
}

// dsnVia rewrites dsn to connect through addr.
func dsnVia(t testing.TB, dsn, addr string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.Addr = addr
	return cfg.FormatDSN()
}
