package drain_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// the retention, alone ("idle"), while one ALTER TABLE … DROP PARTITION drops that day (the
// way before the twin tables, "drop-partition", the baseline), and while
// mysqlstore.LogPartitions.Maintain takes it out ("maintain": the day's partition exchanged with
// an empty twin, dropped, then the twin dropped). The drop starts once a fifth of the events are
// drained. It reports the drain's events/s; the log's share of the drop (drop_ms: the whole ALTER
// for drop-partition, Maintenance.Detaching for maintain) and the twin's (twin_ms); and the
// drain's batch latency, p99 and max over the run (batch_p99_ms, batch_max_ms) and the longest
// batch that overlapped the drop until the twin's drop (batch_max_log_ms: the twin made, the
// exchange, the empty partition dropped) and the twin's drop (batch_max_twin_ms).
// Run it with a fixed count large enough for the drain to outlast the drop, so the day is laid
// down once per mode:
//
//	POPUP_BENCH_DAY_ROWS=5000000 go test -run '^$' -bench '^BenchmarkDrainWhileDroppingADay$' -benchtime 100000x ./internal/drain/
func BenchmarkDrainWhileDroppingADay(b *testing.B) {
	rows := 256_000
	if v := os.Getenv("POPUP_BENCH_DAY_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "POPUP_BENCH_DAY_ROWS")
		rows = n
	}
	for _, mode := range []string{"idle", "drop-partition", "maintain"} {
		b.Run(mode, func(b *testing.B) {
			n := b.N
			if n == 1 {
				return // go test's first pass, of one event, would lay the day down for nothing
			}
			e := newEnv(b, 1, 15*time.Second)
			old := fillOldDay(b, e, rows)
			e.produce(fmt.Sprintf("drop%d", n), 0, n)
			var (
				written atomic.Int64
				lat     batchTimes
			)
			done := make(chan struct{})
			fifth := make(chan struct{})
			fifthAt := int64(max(n/5, 1))
			sink := sinkFunc(func(ctx context.Context, events []event.Event) error {
				s := time.Now()
				if err := e.writer.WriteBatch(ctx, events); err != nil {
					return err
				}
				lat.add(s, time.Since(s))
				w := written.Add(int64(len(events)))
				if w-int64(len(events)) < fifthAt && w >= fifthAt { // once: the batch that crosses a fifth
					close(fifth)
				}
				if w == int64(n) {
					close(done)
				}
				return nil
			})
			cfg := e.config("bench")
			cfg.BatchSize = 500
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var drop dropTimes
			dropDone := make(chan struct{})
			b.ResetTimer()
			start := time.Now()
			r := e.start(sink, cfg)
			go func() {
				defer close(dropDone)
				if mode == "idle" {
					return
				}
				select {
				case <-fifth:
				case <-ctx.Done():
					return
				}
				var err error
				if drop, err = dropOldDay(ctx, e, mode, old); err != nil {
					b.Error(err)
				}
			}()
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
			b.ReportMetric(lat.quantile(0.99), "batch_p99_ms")
			b.ReportMetric(lat.quantile(1), "batch_max_ms")
			if mode == "idle" {
				return
			}
			if drop.end.After(start.Add(elapsed)) {
				b.Logf("the drain ended %v before the drop: a larger count lets it outlast the drop", drop.end.Sub(start.Add(elapsed)).Round(time.Millisecond))
			}
			b.ReportMetric(ms(drop.log), "drop_ms")
			b.ReportMetric(lat.maxOverlapping(drop.start, drop.end.Add(-drop.twin)), "batch_max_log_ms")
			if mode == "maintain" {
				b.ReportMetric(ms(drop.twin), "twin_ms")
				b.ReportMetric(lat.maxOverlapping(drop.end.Add(-drop.twin), drop.end), "batch_max_twin_ms")
			}
		})
	}
}

// dropTimes is when a drop of a day ran, and the log's share and the twin's of its time.
type dropTimes struct {
	start, end time.Time
	log, twin  time.Duration
}

// dropOldDay drops the day of old (its partition pold) the way mode says: one DROP PARTITION
// ("drop-partition") or LogPartitions.Maintain ("maintain"; the day ends before the cutoff's day,
// the drained events' day does not).
func dropOldDay(ctx context.Context, e *env, mode string, old time.Time) (dropTimes, error) {
	d := dropTimes{start: time.Now()}
	if mode == "drop-partition" {
		_, err := e.db.ExecContext(ctx, "ALTER TABLE popup_action_log DROP PARTITION pold")
		d.end = time.Now()
		d.log = d.end.Sub(d.start)
		return d, err
	}
	m, err := mysqlstore.NewLogPartitions(e.db).Maintain(ctx, time.Now(), old.Add(24*time.Hour))
	d.end = time.Now()
	d.log, d.twin = m.Detaching, m.Removing
	if err == nil && len(m.Dropped) != 1 {
		err = fmt.Errorf("dropped %v, want pold alone", m.Dropped)
	}
	return d, err
}

// ms is d in milliseconds, for ReportMetric.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// batchTimes collects the drain's batch writes: when each started and how long it took.
type batchTimes struct {
	mu     sync.Mutex
	starts []time.Time
	took   []time.Duration
}

func (l *batchTimes) add(start time.Time, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, start)
	l.took = append(l.took, took)
}

// quantile is the q-quantile of the batches' times in ms (nearest rank; 1 is the longest).
func (l *batchTimes) quantile(q float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.took) == 0 {
		return 0
	}
	sorted := slices.Clone(l.took)
	slices.Sort(sorted)
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return ms(sorted[max(i, 0)])
}

// maxOverlapping is the longest, in ms, of the batches that ran during part of [from, to].
func (l *batchTimes) maxOverlapping(from, to time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var longest time.Duration
	for i, s := range l.starts {
		if s.Before(to) && s.Add(l.took[i]).After(from) {
			longest = max(longest, l.took[i])
		}
	}
	return ms(longest)
}

// fillOldDay lays down at least rows action-log rows on one UTC day 60 days before t0 over popups
// 1-5 (the drained events' popups), within two hours of its start, in a partition pold of that
// day's own, and returns the day's start. The partition is split off the first one while both are
// empty, then filled by bulkFill.
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
	var sels []string
	for lo := 1; lo <= rows; lo += 1_000_000 {
		sels = append(sels, fmt.Sprintf(`SELECT CONCAT('old-', seq), CONCAT('u', seq %% 300), 1 + seq %% 5, 'impression', ? + INTERVAL (seq %% 7200) SECOND
			FROM seq_%d_to_%d`, lo, min(lo+1_000_000-1, rows)))
	}
	start := time.Now()
	require.NoError(b, bulkFill(ctx, e.slowDB(b), "pold", sels, day.Add(time.Hour)))
	b.Logf("laid down the day's %d rows in %v", rows, time.Since(start).Round(time.Second))
	return day
}

// slowDB is a connection pool to e's database that waits as long as a statement over millions of
// rows takes on a busy machine (the fills, the counts).
func (e *env) slowDB(b *testing.B) *sql.DB {
	b.Helper()
	sep := "?"
	if strings.Contains(e.dsn, "?") {
		sep = "&"
	}
	return openDB(b, e.dsn+sep+"readTimeout=30m&writeTimeout=30m")
}

// bulkFill adds the rows of each of sels (a SELECT of event_id, uid, popup_id, action and
// event_at, taking arg) to the log's partition part, the way a large day is laid down fast: the
// partition's rows and then sels' go into an empty twin table in one transaction with unique
// checks off, which MariaDB builds by sorting each index once (its bulk insert into an empty
// table) instead of inserting every row into every index; then the twin is exchanged with the
// partition. The B-trees it builds are full where the drain's inserts leave pages part empty, so
// its day's file is smaller than a day the drain wrote.
func bulkFill(ctx context.Context, db *sql.DB, part string, sels []string, arg any) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	twin := "fill_" + part
	steps := []string{
		"DROP TABLE IF EXISTS " + twin,
		"CREATE TABLE " + twin + " LIKE popup_action_log",
		"ALTER TABLE " + twin + " REMOVE PARTITIONING",
		"SET SESSION unique_checks = 0, foreign_key_checks = 0",
		"BEGIN",
		"INSERT INTO " + twin + " SELECT * FROM popup_action_log PARTITION (" + part + ")",
	}
	for _, q := range steps {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("fill %s: %s: %w", part, q, err)
		}
	}
	for _, sel := range sels {
		if _, err := conn.ExecContext(ctx, "INSERT INTO "+twin+" (event_id, uid, popup_id, action, event_at) "+sel, arg); err != nil {
			return fmt.Errorf("fill %s: %w", part, err)
		}
	}
	for _, q := range []string{
		"COMMIT",
		"SET SESSION unique_checks = 1, foreign_key_checks = 1",
		"ALTER TABLE popup_action_log EXCHANGE PARTITION " + part + " WITH TABLE " + twin,
		"DROP TABLE " + twin,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("fill %s: %s: %w", part, q, err)
		}
	}
	return nil
}
