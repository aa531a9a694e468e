package drain_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
)

// logDays is how many UTC days of the action log BenchmarkLogGrowth keeps filled: the default
// retention's 30.
const logDays = 30

// BenchmarkLogGrowth shows whether the drain and the retention stay flat as the action log grows
// (docs/SCALING.md, docs/PERFORMANCE.md "The action log as it grows"). One database for the whole
// run: for each size of POPUP_BENCH_LOG_SIZES (rows, ascending; default 1,000,000, 10,000,000 and
// 50,000,000) the log is filled up to that size, spread evenly over 30 day partitions ending on
// the drained events' day (rows laid down by MariaDB's sequence engine: the newest day row by row
// as the drain's own inserts meet it, the older ones by bulkFill), then
//
//   - b.N events are drained into it (batches of 500; they land in the newest, fullest-of-a-day
//     partition), reported as events/s;
//   - the oldest day is dropped with mysqlstore.LogPartitions.Maintain, reported as drop_ms (the
//     log's share: its partition exchanged with an empty twin table, then dropped) and twin_ms
//     (the twin, which then holds the day, dropped), with the rows it held (day_rows).
//
// Each pass drops one day more (go test runs each size once with b.N = 1 before the count asked
// for): the run lays out 30 days plus two per size, the extra days oldest.
// With POPUP_BENCH_GROWTH_CSV set, it also appends "rows,events_per_s,drop_ms,day_rows,twin_ms,load1"
// lines to that file (load1: the machine's load average over the minute before the drop, from
// /proc/loadavg; scripts/growth-soak.sh plots them). It needs a MariaDB with room: 50 million rows are
// about 17 GB of data and indexes. Run it through scripts/growth-soak.sh, or with a fixed count:
//
//	POPUP_BENCH_LOG_SIZES=1000000,10000000 go test -tags jsoniter,nomsgpack -run '^$' \
//	  -bench '^BenchmarkLogGrowth$' -benchtime 50000x -timeout 6h ./internal/drain/
func BenchmarkLogGrowth(b *testing.B) {
	sizes := []int{1_000_000, 10_000_000, 50_000_000}
	if v := os.Getenv("POPUP_BENCH_LOG_SIZES"); v != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			require.NoError(b, err, "POPUP_BENCH_LOG_SIZES")
			sizes = append(sizes, n)
		}
	}
	e := newEnv(b, 1, 15*time.Second)
	ctx := context.Background()
	newest := t0.Truncate(24 * time.Hour) // the drained events' day (mkEvent: t0 + i ms)
	days := logDays + 2*len(sizes)
	oldest := newest.Add(-time.Duration(days-1) * 24 * time.Hour)
	splitDays(b, e, oldest, days)
	slow := e.slowDB(b)
	pass := 0 // passes so far: days dropped
	for _, size := range sizes {
		b.Run(fmt.Sprintf("rows-%d", size), func(b *testing.B) {
			step := pass
			pass++
			// fill the days still kept (the dropped ones are gone) up to size rows in all, two
			// days at a time (one statement runs on one of MariaDB's threads)
			first := oldest.Add(time.Duration(step) * 24 * time.Hour)
			kept := days - step
			var wg sync.WaitGroup
			work := make(chan time.Time, kept)
			errs := make(chan error, kept)
			for d := range kept {
				work <- first.Add(time.Duration(d) * 24 * time.Hour)
			}
			close(work)
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for day := range work {
						errs <- fillDay(slow, day, size/kept, day.Equal(newest))
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(b, err)
			}
			rows := logRows(b, slow)
			n := b.N
			e.produce(fmt.Sprintf("grow%d-%d", step, n), 0, n)
			elapsed := e.drainTimed(b, n, e.writer.WriteBatch, 10*time.Minute)

			dropped := dayRows(b, slow, first)
			load := loadAverage()
			s := time.Now()
			m, err := mysqlstore.NewLogPartitions(e.db).Maintain(ctx, time.Now(), first.Add(24*time.Hour))
			took := time.Since(s)
			require.NoError(b, err)
			require.Len(b, m.Dropped, 1, "the oldest day, alone")

			b.ReportMetric(float64(rows), "log_rows")
			b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
			b.ReportMetric(ms(m.Detaching), "drop_ms")
			b.ReportMetric(ms(m.Removing), "twin_ms")
			b.ReportMetric(ms(took), "maintain_ms")
			b.ReportMetric(float64(dropped), "day_rows")
			// (not the pass of one event that go test runs first: its rate measures nothing)
			if path := os.Getenv("POPUP_BENCH_GROWTH_CSV"); path != "" && n > 1 {
				f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				require.NoError(b, err)
				_, err = fmt.Fprintf(f, "%d,%.0f,%.1f,%d,%.1f,%s\n", rows, float64(n)/elapsed.Seconds(), ms(m.Detaching), dropped, ms(m.Removing), load)
				require.NoError(b, err)
				require.NoError(b, f.Close())
			}
		})
	}
}

// splitDays gives each of the days from oldest on a partition of its own, split off the log's
// first partition while both are empty (the migration's partitions start today; the benchmark's
// days are in the past).
func splitDays(b *testing.B, e *env, oldest time.Time, days int) {
	b.Helper()
	var first string
	var bound int64
	require.NoError(b, e.db.QueryRow(`SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM information_schema.PARTITIONS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'popup_action_log' AND PARTITION_ORDINAL_POSITION = 1`).Scan(&first, &bound))
	parts := make([]string, 0, days+1)
	for d := range days {
		day := oldest.Add(time.Duration(d) * 24 * time.Hour)
		parts = append(parts, fmt.Sprintf("PARTITION g%s VALUES LESS THAN (TO_DAYS('%s') + 1)", day.Format("20060102"), day.Format("2006-01-02")))
	}
	parts = append(parts, fmt.Sprintf("PARTITION %s VALUES LESS THAN (%d)", first, bound))
	_, err := e.db.Exec(fmt.Sprintf("ALTER TABLE popup_action_log REORGANIZE PARTITION %s INTO (%s)", first, strings.Join(parts, ", ")))
	require.NoError(b, err)
}

// dayRows counts the log's rows on day (its own partition).
func dayRows(b *testing.B, db *sql.DB, day time.Time) int {
	b.Helper()
	var n int
	require.NoError(b, db.QueryRow("SELECT COUNT(*) FROM popup_action_log PARTITION (g"+day.Format("20060102")+")").Scan(&n))
	return n
}

func logRows(b *testing.B, db *sql.DB) int {
	b.Helper()
	var n int
	require.NoError(b, db.QueryRow("SELECT COUNT(*) FROM popup_action_log").Scan(&n))
	return n
}

// fillDay fills day's partition up to want rows: users out of ten million, popups 1-20, times
// spread over the day, ids unique per day. The day the drain writes into (rowByRow) gets them
// as the drain's own inserts meet them, 200,000 rows a statement; the others through bulkFill,
// many times faster.
func fillDay(fill *sql.DB, day time.Time, want int, rowByRow bool) error {
	part := "g" + day.Format("20060102")
	var have int
	if err := fill.QueryRow("SELECT COUNT(*) FROM popup_action_log PARTITION (" + part + ")").Scan(&have); err != nil {
		return err
	}
	var sels []string
	for lo := have + 1; lo <= want; lo += 200_000 {
		sels = append(sels, fmt.Sprintf(`SELECT CONCAT('g%s-', seq), CONCAT('u', seq * 7919 %% 10000000), 1 + seq %% 20,
			       ELT(1 + seq %% 20 DIV 17, 'impression', 'close'), ? + INTERVAL (seq %% 86400) SECOND
			FROM seq_%d_to_%d`, day.Format("0102"), lo, min(lo+200_000-1, want)))
	}
	if len(sels) == 0 {
		return nil
	}
	if !rowByRow {
		return bulkFill(context.Background(), fill, part, sels, day)
	}
	for _, sel := range sels {
		if _, err := fill.Exec("INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) "+sel, day); err != nil {
			return fmt.Errorf("fill %s: %w", day.Format("2006-01-02"), err)
		}
	}
	return nil
}

// loadAverage is the machine's load average over the last minute, as /proc/loadavg has it, or
// "" where there is none.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(raw)); len(f) > 0 {
		return f[0]
	}
	return ""
}
