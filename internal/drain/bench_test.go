package drain_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/privacy"
)

// BenchmarkDrain measures the whole drain (claim from Redis, decode, write to MySQL, acknowledge)
// of b.N queued events, against the real MariaDB and Redis of the test harness, and reports
// events/s. "one-by-one" is the naive baseline: the same loop, but every event is its own MySQL
// transaction of two single-row statements. Run it with
//
//	go test -run '^$' -bench '^BenchmarkDrain$' -benchtime 3s ./internal/drain/
//
// (the POPUP_TEST_* variables set, as `make test` does); docs/PERFORMANCE.md has the figures.
func BenchmarkDrain(b *testing.B) {
	modes := []struct {
		name     string
		shards   int
		batch    int
		oneByOne bool
		edits    []func(*event.Event, int) // applied to each event before it is queued
		// tombstones: the writer drops erased users' events (POPUP_PRIVACY_KEY set), against this
		// many tombstones of other users.
		tombstones int
	}{
		{name: "one-by-one", shards: 1, batch: 500, oneByOne: true},
		{name: "batched-100", shards: 1, batch: 100},
		{name: "batched-500", shards: 1, batch: 500},
		{name: "batched-2000", shards: 1, batch: 2000},
		{name: "batched-500-4shards", shards: 4, batch: 500},
		{name: "batched-500-16shards", shards: 16, batch: 500}, // POPUP_QUEUE_SHARDS on a Cluster
		// The experiment rollup's price: the same events without and with experiment arms.
		{name: "batched-500-everyaction", shards: 1, batch: 500, edits: []func(*event.Event, int){everyAction}},
		{name: "batched-500-experiments", shards: 1, batch: 500, edits: []func(*event.Event, int){everyAction, inExperiment}},
		// The erasure tombstone check's price (docs/CONTRACT.md §12): batched-500 with it.
		{name: "batched-500-tombstones", shards: 1, batch: 500, tombstones: 1000},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			n := b.N // events; ns/op is per event
			e := newEnv(b, m.shards, 15*time.Second)
			e.produce(fmt.Sprintf("bench%d", n), 0, n, m.edits...)
			var written atomic.Int64
			done := make(chan struct{})
			write := e.writer.WriteBatch
			if m.tombstones > 0 {
				write = e.tombstoned(m.tombstones).WriteBatch
			}
			if m.oneByOne {
				write = e.writer.WriteOneByOne
			}
			sink := sinkFunc(func(ctx context.Context, events []event.Event) error {
				if err := write(ctx, events); err != nil {
					return err
				}
				if written.Add(int64(len(events))) == int64(n) {
					close(done)
				}
				return nil
			})
			cfg := e.config("bench")
			cfg.BatchSize = m.batch
			b.ResetTimer()
			start := time.Now()
			r := e.start(sink, cfg)
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("drained %d of %d events in 5 minutes", written.Load(), n)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			r.stop(b)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
		})
	}
}

// tombstoned returns a writer that checks every batch against the tombstones, after recording n
// erasures of users the benchmark's events do not belong to.
func (e *env) tombstoned(n int) *mysqlstore.EventWriter {
	keyed, err := privacy.NewKeyed("bench-privacy-key-0123456789abcdef0123456789")
	require.NoError(e.t, err)
	repo := mysqlstore.NewPrivacyRepo(e.db)
	for i := range n {
		require.NoError(e.t, repo.Tombstone(context.Background(), keyed.UID("erased-"+strconv.Itoa(i)), time.Now().Add(time.Hour)))
	}
	w := mysqlstore.NewEventWriter(e.db)
	w.Erased = keyed
	return w
}

// everyAction gives each of mkEvent's users every action in turn (mkEvent's action is i%3 and its
// uid i%300, so each user has one action only), so that users with impressions also click and
// close; it keeps the users, popups and the share of each action.
func everyAction(ev *event.Event, i int) {
	ev.Action = []event.Action{event.Impression, event.Click, event.Close}[(i+i/300)%3]
}

// inExperiment puts event i in its popup's experiment, one of three arms by user, a control's
// impressions being exposures: every event adds to the experiment rollup. With everyAction.
func inExperiment(ev *event.Event, i int) {
	arm := []string{"a", "b", "control"}[i%300%3] // by user: mkEvent's uid is i%300
	ev.Arms = []event.ArmRef{{PopupID: ev.PopupID, Salt: "bench", Arm: arm}}
	if arm == "control" && ev.Action == event.Impression {
		ev.Action = event.Exposure
	}
}

// BenchmarkDrainWhilePurging measures what the action-log retention purge costs the drain: the
// same batched drain of b.N events into a log already holding 256,000 rows older than the
// retention, once alone ("idle") and once while mysqlstore.LogPurger removes those old rows
// with its production settings ("purging"). It reports the drain's events/s and the rows the
// purge removed per second meanwhile. Run it with a fixed count, so the 256,000 rows are laid
// down once per mode:
//
//	go test -run '^$' -bench '^BenchmarkDrainWhilePurging$' -benchtime 20000x ./internal/drain/
func BenchmarkDrainWhilePurging(b *testing.B) {
	for _, purging := range []bool{false, true} {
		name := map[bool]string{false: "idle", true: "purging"}[purging]
		b.Run(name, func(b *testing.B) {
			n := b.N
			e := newEnv(b, 1, 15*time.Second)
			fillOldLog(b, e, 256_000)
			e.produce(fmt.Sprintf("purge%d", n), 0, n)
			var written atomic.Int64
			done := make(chan struct{})
			sink := sinkFunc(func(ctx context.Context, events []event.Event) error {
				if err := e.writer.WriteBatch(ctx, events); err != nil {
					return err
				}
				if written.Add(int64(len(events))) == int64(n) {
					close(done)
				}
				return nil
			})
			cfg := e.config("bench")
			cfg.BatchSize = 500
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var purged atomic.Int64
			purgeDone := make(chan struct{})
			b.ResetTimer()
			start := time.Now()
			if purging {
				go func() {
					defer close(purgeDone)
					p := mysqlstore.NewLogPurger(e.db)
					// The drained events are at t0; the old rows 60 days before it.
					_, _ = p.Purge(ctx, t0.Add(-24*time.Hour), func(k int64) { purged.Add(k) })
				}()
			} else {
				close(purgeDone)
			}
			r := e.start(sink, cfg)
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("drained %d of %d events in 5 minutes", written.Load(), n)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			<-purgeDone
			r.stop(b)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(purged.Load())/elapsed.Seconds(), "purged/s")
		})
	}
}

// fillOldLog lays down at least rows action-log rows 60 days before t0 over popups 1-5 (the drained
// events' popups), by doubling a seed.
func fillOldLog(b *testing.B, e *env, rows int) {
	b.Helper()
	ctx := context.Background()
	var q strings.Builder
	q.WriteString("INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES ")
	const seed = 1000
	old := t0.Add(-60 * 24 * time.Hour)
	args := make([]any, 0, seed*5)
	for i := range seed {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?)")
		args = append(args, fmt.Sprintf("old-%d", i), fmt.Sprintf("u%d", i%300), 1+i%5, "impression", old.Add(time.Duration(i)*time.Second))
	}
	_, err := e.db.ExecContext(ctx, q.String(), args...)
	require.NoError(b, err)
	for k, have := 0, seed; have < rows; k, have = k+1, have*2 {
		_, err := e.db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at)
			SELECT CONCAT(event_id, 'd', ?), uid, popup_id, action, event_at + INTERVAL ? SECOND FROM popup_action_log`, k, 1<<k)
		require.NoError(b, err)
	}
}
