package drain_test

import (
	"context"
	"fmt"
	"os"
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
		// Results per locale: the same events, impressions carrying a locale and clicks the
		// decision id of their user's impression before (the worker looks it up).
		{name: "batched-500-locales", shards: 1, batch: 500, edits: []func(*event.Event, int){everyAction, withLocale}},
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

// drainTimed drains the n events queued with write in batches of 500 (the default), timed from
// ResetTimer to StopTimer, and returns how long it took; it fails the benchmark after within.
func (e *env) drainTimed(b *testing.B, n int, write func(context.Context, []event.Event) error, within time.Duration) time.Duration {
	b.Helper()
	var written atomic.Int64
	done := make(chan struct{})
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
	cfg.BatchSize = 500
	b.ResetTimer()
	start := time.Now()
	r := e.start(sink, cfg)
	select {
	case <-done:
	case <-time.After(within):
		b.Fatalf("drained %d of %d events in %v", written.Load(), n, within)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	r.stop(b)
	return elapsed
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

// withLocale gives an impression a locale (one of three, by user) and its own id as decision id,
// and a click the decision id of its user's event before, an impression (with everyAction, user
// i%300's events cycle impression, click, close): that impression is in the click's batch or
// an earlier one, in the log.
func withLocale(ev *event.Event, i int) {
	switch ev.Action {
	case event.Impression:
		ev.DecisionID, ev.Locale = ev.ID, []string{"default", "pt-BR", "de"}[i%300%3]
	case event.Click:
		ev.DecisionID = fmt.Sprintf("%s%06d", ev.ID[:len(ev.ID)-6], i-300)
	}
}

// BenchmarkDrainWhileDroppingADay measures what the action log's retention costs the drain, and
// how long the drop of a day takes however full the day is: the same batched drain of b.N events
// into a log whose oldest day partition holds POPUP_BENCH_DAY_ROWS rows (default 256,000) past
// the retention, once alone ("idle") and once while mysqlstore.LogPartitions drops that day
// ("dropping"). It reports the drain's events/s and the drop's duration (drop_ms). Run it with a
// fixed count, so the day is laid down once per mode:
//
//	POPUP_BENCH_DAY_ROWS=5000000 go test -run '^$' -bench '^BenchmarkDrainWhileDroppingADay$' -benchtime 20000x ./internal/drain/
func BenchmarkDrainWhileDroppingADay(b *testing.B) {
	rows := 256_000
	if v := os.Getenv("POPUP_BENCH_DAY_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "POPUP_BENCH_DAY_ROWS")
		rows = n
	}
	for _, dropping := range []bool{false, true} {
		name := map[bool]string{false: "idle", true: "dropping"}[dropping]
		b.Run(name, func(b *testing.B) {
			n := b.N
			e := newEnv(b, 1, 15*time.Second)
			old := fillOldDay(b, e, rows)
			e.produce(fmt.Sprintf("drop%d", n), 0, n)
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
			var took time.Duration
			dropDone := make(chan struct{})
			b.ResetTimer()
			start := time.Now()
			if dropping {
				go func() {
					defer close(dropDone)
					// The old day ends before the cutoff's day; the drained events' day (t0) does not.
					s := time.Now()
					m, err := mysqlstore.NewLogPartitions(e.db).Maintain(ctx, time.Now(), old.Add(24*time.Hour))
					took = time.Since(s)
					if err != nil || len(m.Dropped) != 1 {
						b.Errorf("drop the old day: dropped %v, %v", m.Dropped, err)
					}
				}()
			} else {
				close(dropDone)
			}
			r := e.start(sink, cfg)
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("drained %d of %d events in 5 minutes", written.Load(), n)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			<-dropDone
			cancel()
			r.stop(b)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
			if dropping {
				b.ReportMetric(float64(took.Microseconds())/1000, "drop_ms")
			}
		})
	}
}

// fillOldDay lays down at least rows action-log rows on one UTC day 60 days before t0 over popups
// 1-5 (the drained events' popups), by doubling a seed, in a partition of that day's own, and
// returns the day's start. The partition is split off the first one while both are empty.
func fillOldDay(b *testing.B, e *env, rows int) time.Time {
	b.Helper()
	ctx := context.Background()
	day := t0.Add(-60 * 24 * time.Hour).Truncate(24 * time.Hour)
	var first string
	var bound int64
	require.NoError(b, e.db.QueryRowContext(ctx, `SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM information_schema.PARTITIONS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'popup_action_log' AND PARTITION_ORDINAL_POSITION = 1`).Scan(&first, &bound))
	_, err := e.db.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE popup_action_log REORGANIZE PARTITION %s INTO
		(PARTITION pold VALUES LESS THAN (TO_DAYS(?) + 1), PARTITION %[1]s VALUES LESS THAN (%d))`, first, bound), day)
	require.NoError(b, err)
	fillOldLog(b, e, day.Add(time.Hour), rows)
	return day
}

// fillOldLog lays down rows action-log rows within two hours of old over popups 1-5 (the drained
// events' popups), 200,000 rows a statement from MariaDB's sequence engine, on a connection that
// waits as long as a statement takes on a busy machine.
func fillOldLog(b *testing.B, e *env, old time.Time, rows int) {
	b.Helper()
	ctx := context.Background()
	sep := "?"
	if strings.Contains(e.dsn, "?") {
		sep = "&"
	}
	fill := openDB(b, e.dsn+sep+"readTimeout=30m&writeTimeout=30m")
	for lo := 1; lo <= rows; lo += 200_000 {
		_, err := fill.ExecContext(ctx, fmt.Sprintf(`INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at)
			SELECT CONCAT('old-', seq), CONCAT('u', seq %% 300), 1 + seq %% 5, 'impression', ? + INTERVAL (seq %% 7200) SECOND
			FROM seq_%d_to_%d`, lo, min(lo+200_000-1, rows)), old)
		require.NoError(b, err)
	}
}
