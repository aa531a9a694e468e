package drain_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/drain"
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
)

type sinkFunc func(ctx context.Context, events []event.Event) error

func (f sinkFunc) WriteBatch(ctx context.Context, events []event.Event) error { return f(ctx, events) }

func TestDrainWritesEveryQueuedEventOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 2*time.Second)
	ids := e.produce("a", 0, 3000)
	r := e.start(e.writer, e.config("w1"))

	e.waitLog(3000, 20*time.Second)
	r.stop(t)

	e.requireExactlyOnce(ids)
	e.requireQueueEmpty()
	assert.Equal(t, 3000.0, e.metric("popup_worker_rows_written_total", mysqlstore.TableActionLog))
	assert.Positive(t, e.metric("popup_worker_batches_total", "ok"))
	workers, err := e.queue.Workers(context.Background(), 0)
	require.NoError(t, err)
	assert.Empty(t, workers, "a stopped worker unregisters")
}

func TestDrainFinishesItsOwnPendingListFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2*time.Second)
	ids := e.produce("p", 0, 300)
	_, err := e.queue.Claim(context.Background(), 0, "w1", 100) // as a previous life of w1 left it
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		first []event.Event
	)
	recording := sinkFunc(func(ctx context.Context, events []event.Event) error {
		mu.Lock()
		if first == nil {
			first = append([]event.Event(nil), events...)
		}
		mu.Unlock()
		return e.writer.WriteBatch(ctx, events)
	})
	cfg := e.config("w1")
	cfg.BatchSize = 50
	r := e.start(recording, cfg)

	e.waitLog(300, 20*time.Second)
	r.stop(t)

	require.Len(t, first, 50)
	assert.Equal(t, ids[0], first[0].ID)
	assert.Equal(t, ids[49], first[49].ID)
	e.requireExactlyOnce(ids)
	e.requireQueueEmpty()
}

func TestDrainReclaimsTheListOfADeadWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 300*time.Millisecond)
	ids := e.produce("r", 0, 500)
	_, err := e.queue.Claim(context.Background(), 0, "ghost", 200) // claimed, then the ghost died
	require.NoError(t, err)
	cfg := e.config("w1")
	cfg.Lease = 300 * time.Millisecond
	r := e.start(e.writer, cfg)

	e.waitLog(500, 20*time.Second)
	r.stop(t)

	e.requireExactlyOnce(ids)
	e.requireQueueEmpty()
	assert.Equal(t, 200.0, e.metric("popup_worker_reclaimed_events_total", ""))
	workers, err := e.queue.Workers(context.Background(), 0)
	require.NoError(t, err)
	assert.NotContains(t, workers, "ghost")
}

func TestDrainKeepsEverythingThroughAMySQLOutage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 2*time.Second)
	p := startProxy(t, mustAddr(t, e.dsn))
	viaProxy := openDB(t, dsnVia(t, e.dsn, p.addr))
	w := mysqlstore.NewEventWriter(viaProxy)
	r := e.start(w, e.config("w1"))
	ids := e.produce("o", 0, 1000)
	e.waitLog(1000, 20*time.Second)
	// The log shows a batch once its COMMIT is done, a moment before the worker reads the
	// COMMIT's answer and acknowledges the batch in Redis. Cut then, the answer is lost, the
	// batch stays in the processing list and is written again after the outage (harmlessly:
	// writes are idempotent), so the outage starts only once every written event is acknowledged.
	e.waitQueued(0, 20*time.Second)

	failedBefore := e.metric("popup_mysql_errors_total", "transient")
	p.down()
	ids = append(ids, e.produce("o", 1000, 2000)...) // the API keeps queueing
	// Several failed attempts and back-offs, counted by the drain itself. (A loop, not
	// require.Eventually: e.metric may fail the test, which only the test's goroutine may do.)
	for deadline := time.Now().Add(20 * time.Second); e.metric("popup_mysql_errors_total", "transient") < failedBefore+3; {
		require.True(t, time.Now().Before(deadline), "the drain never retried against the dead MySQL")
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, 1000, e.logCount(), "nothing written while MySQL is away")
	assert.Equal(t, int64(2000), e.queued(), "every event waits in Redis")
	p.up()

	e.waitLog(3000, 30*time.Second)
	r.stop(t)
	e.requireExactlyOnce(ids)
	e.requireQueueEmpty()
	assert.Empty(t, e.deadLetters(), "an outage is not poison")
}

func TestDrainDeadLettersPoisonAndKeepsGoing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2*time.Second)
	tooMany := event.Event{ID: "too-many", UID: "u1", PopupID: 1, Action: event.Impression, At: t0, Impressions: 5_000_000_000}
	notASCII := event.Event{ID: "not-ascii", UID: "üser", PopupID: 1, Action: event.Click, At: t0}
	ids := e.produce("g", 0, 150)
	e.pushRaw(0, `{"v":1,"id":`, string(event.Append(nil, &tooMany)), "\xff\xfe", string(event.Append(nil, &notASCII)))
	ids = append(ids, e.produce("g", 150, 150)...)
	cfg := e.config("w1")
	cfg.BatchSize = 500 // the poison sits inside one batch with good events
	r := e.start(e.writer, cfg)

	e.waitLog(300, 20*time.Second)
	ids = append(ids, e.produce("g", 300, 100)...) // still draining afterwards
	e.waitLog(400, 20*time.Second)
	r.stop(t)

	e.requireExactlyOnce(ids)
	e.requireQueueEmpty()
	dead := e.deadLetters()
	require.Len(t, dead, 4)
	reasons := map[string]string{}
	for _, d := range dead {
		reasons[string(d.Bytes())] = d.Reason
	}
	assert.Contains(t, reasons[`{"v":1,"id":`], "undecodable")
	assert.Contains(t, reasons["\xff\xfe"], "undecodable")
	assert.Contains(t, reasons[string(event.Append(nil, &tooMany))], "Out of range")
	assert.Contains(t, reasons[string(event.Append(nil, &notASCII))], "Incorrect string value")
	assert.Equal(t, 2.0, e.metric("popup_worker_dead_letters_total", "undecodable"))
	assert.Equal(t, 2.0, e.metric("popup_worker_dead_letters_total", "rejected"))
}

func TestSeveralDrainsShareTheQueueWithoutLossOrDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 2*time.Second)
	var delivered atomic.Int64
	counting := sinkFunc(func(ctx context.Context, events []event.Event) error {
		err := e.writer.WriteBatch(ctx, events)
		if err == nil {
			delivered.Add(int64(len(events)))
		}
		return err
	})
	var rs []*running
	for _, w := range []string{"w1", "w2", "w3"} {
		cfg := e.config(w)
		cfg.BatchSize = 50
		rs = append(rs, e.start(counting, cfg))
	}
	var ids []string
	for i := range 12 {
		ids = append(ids, e.produce("s", i*500, 500)...)
		time.Sleep(10 * time.Millisecond)
	}

	e.waitLog(6000, 30*time.Second)
	for _, r := range rs {
		r.stop(t)
	}

	e.requireExactlyOnce(ids)
	e.requireQueueEmpty()
	assert.Equal(t, int64(6000), delivered.Load(), "each event went to exactly one worker, once")
}

func TestDrainShutdownFinishesTheBatchInHand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2*time.Second)
	ids := e.produce("h", 0, 50)
	started := make(chan struct{})
	var once sync.Once
	slow := sinkFunc(func(ctx context.Context, events []event.Event) error {
		once.Do(func() { close(started) })
		time.Sleep(300 * time.Millisecond)
		return e.writer.WriteBatch(ctx, events)
	})
	r := e.start(slow, e.config("w1"))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the drain never wrote")
	}
	e.produce("later", 0, 30)

	r.stop(t)

	e.requireExactlyOnce(ids)
	st, err := e.queue.Stats(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, int64(30), st.Length, "nothing claimed after the stop")
	assert.Zero(t, st.ProcessingTotal())
}

func TestDrainShutdownReturnsAnUnwritableBatchToTheQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2*time.Second)
	e.produce("u", 0, 50)
	before, err := e.rdb.LRange(context.Background(), e.keys.Queue(0), 0, -1).Result()
	require.NoError(t, err)
	var calls atomic.Int64
	down := sinkFunc(func(context.Context, []event.Event) error {
		calls.Add(1)
		return errors.New("connection refused")
	})
	cfg := e.config("w1")
	cfg.Grace = 300 * time.Millisecond
	r := e.start(down, cfg)
	require.Eventually(t, func() bool { return calls.Load() >= 2 }, 10*time.Second, 10*time.Millisecond)

	begin := time.Now()
	r.stop(t)

	assert.Less(t, time.Since(begin), 3*time.Second, "bounded by the grace period")
	after, err := e.rdb.LRange(context.Background(), e.keys.Queue(0), 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, before, after, "the batch is back at the head of the queue, in order")
	st, err := e.queue.Stats(context.Background(), 0)
	require.NoError(t, err)
	assert.Zero(t, st.ProcessingTotal())
	assert.Zero(t, e.logCount())
}

func TestQueueCollectorReportsShardSizes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 2*time.Second)
	e.reg.MustRegister(drain.NewQueueCollector(e.queue, 2))
	old := event.Event{ID: "x", UID: "u", PopupID: 1, Action: event.Click, At: time.Now().Add(-10 * time.Second)}
	e.pushRaw(1, string(event.Append(nil, &old)), "second")
	e.pushRaw(0, "claimed")
	_, err := e.queue.Claim(context.Background(), 0, "w", 1)
	require.NoError(t, err)

	mfs, err := e.reg.Gather()
	require.NoError(t, err)

	got := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "popup_queue_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	assert.Equal(t, 2.0, got["popup_queue_length/1"])
	assert.Equal(t, 0.0, got["popup_queue_length/0"])
	assert.InDelta(t, 10, got["popup_queue_oldest_event_age_seconds/1"], 5)
	assert.Equal(t, 0.0, got["popup_queue_processing_length/1"])
	assert.Equal(t, 1.0, got["popup_queue_processing_length/0"])
	assert.Equal(t, 0.0, got["popup_queue_dead_letter_length/1"])
	assert.Equal(t, 0.0, got["popup_queue_stats_errors/1"])
}

func mustAddr(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	return cfg.Addr
}
