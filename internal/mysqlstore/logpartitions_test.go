package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

// logPartitions lists the action log's partitions, in order, with their row counts.
func logPartitions(t *testing.T, db *sql.DB) (names []string, rows map[string]int) {
	t.Helper()
	// TABLE_ROWS is an estimate: count each partition's rows instead.
	res, err := db.Query(`SELECT PARTITION_NAME FROM information_schema.PARTITIONS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'popup_action_log' ORDER BY PARTITION_ORDINAL_POSITION`)
	require.NoError(t, err)
	defer res.Close()
	for res.Next() {
		var n string
		require.NoError(t, res.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, res.Err())
	rows = make(map[string]int, len(names))
	for _, n := range names {
		var c int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log PARTITION (`+n+`)`).Scan(&c))
		rows[n] = c
	}
	return names, rows
}

// dayPartition is the partition name of t's UTC day.
func dayPartition(t time.Time) string { return "p" + t.UTC().Format("20060102") }

// partitionDay is the UTC day a pYYYYMMDD partition holds.
func partitionDay(t *testing.T, name string) time.Time {
	t.Helper()
	day, err := time.Parse("20060102", strings.TrimPrefix(name, "p"))
	require.NoError(t, err)
	return day
}

// fiveADay is five times on each of the days from first on, five hours apart.
func fiveADay(first time.Time, days int) []time.Time {
	var times []time.Time
	for d := range days {
		for h := range 5 {
			times = append(times, first.Add(time.Duration(d)*24*time.Hour+time.Duration(h*5)*time.Hour))
		}
	}
	return times
}

// insertLog inserts action-log rows straight, one per time.
func insertLog(t *testing.T, db *sql.DB, table, prefix string, times ...time.Time) {
	t.Helper()
	var q strings.Builder
	q.WriteString("INSERT INTO " + table + " (event_id, uid, popup_id, action, event_at) VALUES ")
	args := make([]any, 0, 5*len(times))
	for i, at := range times {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?)")
		args = append(args, fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("u%d", i%7), 1+i%3, "impression", at)
	}
	_, err := db.Exec(q.String(), args...)
	require.NoError(t, err)
}

func TestMaintainDropsWholeDaysPastTheRetentionAndMakesDaysAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	names, _ := logPartitions(t, db)
	require.GreaterOrEqual(t, len(names), 9, "the migration makes today and seven days ahead, then pmax: %v", names)
	require.Equal(t, "pmax", names[len(names)-1])
	first := partitionDay(t, names[0])
	p := mysqlstore.NewLogPartitions(db)
	days := func() []time.Time { // what the status view shows (internal/admin/status)
		t.Helper()
		from, to, err := p.Days(ctx)
		require.NoError(t, err)
		return []time.Time{from, to}
	}
	assert.Equal(t, []time.Time{first, partitionDay(t, names[len(names)-2])}, days())

	// Rows on the first four days, and one far in the past (the first partition takes it).
	times := append(fiveADay(first, 4), first.Add(-400*24*time.Hour))
	insertLog(t, db, "popup_action_log", "m", times...)
	_, rows := logPartitions(t, db)
	require.Equal(t, 6, rows[names[0]], "the first day's partition holds its day and everything before")

	// Two days later, with a retention that keeps the last day and a half: the first two days
	// have ended before the cutoff's day began and go whole; the third, which the cutoff cuts,
	// stays (a row stays at most a day longer than the retention).
	now := first.Add(2*24*time.Hour + 36*time.Hour)
	cutoff := now.Add(-36 * time.Hour)
	m, err := p.Maintain(ctx, now, cutoff)
	require.NoError(t, err)
	assert.False(t, m.Skipped)
	assert.Equal(t, []string{names[0], names[1]}, m.Dropped)
	lastAhead := dayPartition(now.Add(7 * 24 * time.Hour))
	require.NotEmpty(t, m.Added)
	assert.Equal(t, lastAhead, m.Added[len(m.Added)-1], "seven days ahead of now")

	assert.Positive(t, m.Detaching)
	assert.Empty(t, retiredTables(t, db), "the twins that held the days are dropped in the same run")

	after, rows := logPartitions(t, db)
	assert.Equal(t, names[2], after[0])
	assert.Equal(t, lastAhead, after[len(after)-2])
	assert.Equal(t, []time.Time{partitionDay(t, names[2]), partitionDay(t, lastAhead)}, days())
	assert.Equal(t, 5, rows[names[2]])
	assert.Equal(t, 5, rows[names[3]])
	var left, old int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(event_at < ?), 0) FROM popup_action_log`, first.Add(48*time.Hour)).Scan(&left, &old))
	assert.Equal(t, 10, left)
	assert.Zero(t, old, "nothing of the dropped days is left")

	// A late event of a dropped day is still accepted (the first partition takes it) and goes with
	// that partition.
	insertLog(t, db, "popup_action_log", "late", first.Add(time.Hour))
	_, rows = logPartitions(t, db)
	assert.Equal(t, 6, rows[names[2]])

	// Again at once: nothing to do.
	m, err = p.Maintain(ctx, now, cutoff)
	require.NoError(t, err)
	assert.Empty(t, m.Added)
	assert.Empty(t, m.Dropped)

	// The lock is the database's: another database's worker holding its own changes nothing (a name
	// of this test's own: GET_LOCK's names are the server's, shared with every other test).
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	var got int
	require.NoError(t, conn.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT('popup_action_log_partitions:', MD5(CONCAT(DATABASE(), '-another'))), 0)`).Scan(&got))
	require.Equal(t, 1, got)
	m, err = p.Maintain(ctx, now, cutoff)
	require.NoError(t, err)
	assert.False(t, m.Skipped, "another database's lock")

	// While another worker of this database holds the lock, a run skips.
	require.NoError(t, conn.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT('popup_action_log_partitions:', MD5(DATABASE())), 0)`).Scan(&got))
	require.Equal(t, 1, got)
	m, err = p.Maintain(ctx, now.Add(5*24*time.Hour), cutoff.Add(5*24*time.Hour))
	require.NoError(t, err)
	assert.True(t, m.Skipped)
	assert.Empty(t, m.Dropped)
}

// retiredTables returns the twin tables of days taken out of the log, with their row counts.
func retiredTables(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	res, err := db.Query(`SELECT TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'popup\\_action\\_log\\_retired\\_%'`)
	require.NoError(t, err)
	defer res.Close()
	var names []string
	for res.Next() {
		var n string
		require.NoError(t, res.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, res.Err())
	twins := make(map[string]int, len(names))
	for _, n := range names {
		var c int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+n).Scan(&c))
		twins[n] = c
	}
	return twins
}

func TestMaintainFinishesTheDropOfARunKilledBetweenItsSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		exchange bool // the MySQL 8.0 way (EXCHANGE PARTITION), not MariaDB's CONVERT PARTITION
		step     string
		nth      int // stop the n-th time the step ends
		// what the killed run leaves: the twins with their rows, and the rows still in the log
		wantTwins   func(names []string) map[string]int
		wantLogRows int
		// the partitions the next run drops
		wantDropped func(names []string) []string
	}{
		{
			name: "first day converted", step: mysqlstore.StepConverted, nth: 1,
			wantTwins:   func(n []string) map[string]int { return map[string]int{"popup_action_log_retired_" + n[0]: 5} },
			wantLogRows: 10,
			wantDropped: func(n []string) []string { return n[1:2] },
		},
		{
			name: "both days converted", step: mysqlstore.StepConverted, nth: 2,
			wantTwins: func(n []string) map[string]int {
				return map[string]int{"popup_action_log_retired_" + n[0]: 5, "popup_action_log_retired_" + n[1]: 5}
			},
			wantLogRows: 5,
			wantDropped: func([]string) []string { return nil }, // only the twins are left to drop
		},
		{
			name: "exchange: first twin made", exchange: true, step: mysqlstore.StepTwinMade, nth: 1,
			wantTwins:   func(n []string) map[string]int { return map[string]int{"popup_action_log_retired_" + n[0]: 0} },
			wantLogRows: 15,
			wantDropped: func(n []string) []string { return n[:2] },
		},
		{
			name: "exchange: first day exchanged", exchange: true, step: mysqlstore.StepExchanged, nth: 1,
			wantTwins:   func(n []string) map[string]int { return map[string]int{"popup_action_log_retired_" + n[0]: 5} },
			wantLogRows: 10,
			wantDropped: func(n []string) []string { return n[:2] }, // the first one empty
		},
		{
			name: "exchange: second twin made", exchange: true, step: mysqlstore.StepTwinMade, nth: 2,
			wantTwins: func(n []string) map[string]int {
				return map[string]int{"popup_action_log_retired_" + n[0]: 5, "popup_action_log_retired_" + n[1]: 0}
			},
			wantLogRows: 10,
			wantDropped: func(n []string) []string { return n[:2] },
		},
		{
			name: "exchange: partitions dropped", exchange: true, step: mysqlstore.StepDropped, nth: 1,
			wantTwins: func(n []string) map[string]int {
				return map[string]int{"popup_action_log_retired_" + n[0]: 5, "popup_action_log_retired_" + n[1]: 5}
			},
			wantLogRows: 5,
			wantDropped: func([]string) []string { return nil }, // only the twins are left to drop
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testenv.MySQL(t)
			names, _ := logPartitions(t, db)
			first := partitionDay(t, names[0])
			insertLog(t, db, "popup_action_log", "k", fiveADay(first, 3)...)
			// A twin an older build left, of another shape: dropped like the others.
			_, err := db.Exec(`CREATE TABLE popup_action_log_retired_p20200101 (id INT PRIMARY KEY)`)
			require.NoError(t, err)
			now := first.Add(3 * 24 * time.Hour)
			cutoff := first.Add(2 * 24 * time.Hour) // the first two days end by the cutoff's day

			p := mysqlstore.NewLogPartitions(db)
			if tt.exchange {
				p.ExchangeOnly()
			}
			p.StopAfter(tt.step, tt.nth)
			_, err = p.Maintain(ctx, now, cutoff)
			require.ErrorIs(t, err, mysqlstore.ErrStopped)
			assert.Equal(t, tt.wantTwins(names), retiredTables(t, db), "what the killed run left")
			var n int
			require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log`).Scan(&n))
			assert.Equal(t, tt.wantLogRows, n)

			m, err := p.Maintain(ctx, now, cutoff)
			require.NoError(t, err)
			assert.Equal(t, tt.wantDropped(names), m.Dropped)
			assert.Empty(t, retiredTables(t, db), "no twin left")
			after, rows := logPartitions(t, db)
			assert.Equal(t, names[2], after[0], "the two days are out of the log")
			assert.Equal(t, 5, rows[names[2]], "the third day is whole")
			require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log`).Scan(&n))
			assert.Equal(t, 5, n)

			// The log takes writes of every day, as before.
			insertLog(t, db, "popup_action_log", "after", first.Add(time.Hour), now)
			require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log`).Scan(&n))
			assert.Equal(t, 7, n)
		})
	}
}

func TestConvertPartitionIsMariaDBFrom107(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want bool
	}{
		{give: "10.11.19-MariaDB-0+deb12u1", want: true},
		{give: "10.7.1-MariaDB", want: true},
		{give: "11.4.2-MariaDB-log", want: true},
		{give: "10.6.18-MariaDB", want: false},
		{give: "5.5.5-10.11.6-MariaDB", want: false}, // the old replication prefix: read as 5.5, the EXCHANGE way
		{give: "8.0.36", want: false},
		{give: "", want: false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, mysqlstore.ConvertsPartitions(tt.give), tt.give)
	}
}

func TestARedeliveredBatchCountsOnceInThePartitionedLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	// Events over several days (and so partitions), with a retried action: the same event id
	// queued again a day later is a new event (its Redis marker is gone), the same event
	// written again is a redelivery.
	now := time.Now().UTC().Truncate(time.Millisecond)
	var events []event.Event
	for i := range 60 {
		at := now.Add(-time.Duration(i%3) * 24 * time.Hour)
		events = append(events, event.Event{ID: fmt.Sprintf("e%d", i), UID: fmt.Sprintf("u%d", i%9), PopupID: 1, Action: event.Impression, At: at, NextShowAt: at})
	}
	require.NoError(t, w.WriteBatch(ctx, events))
	require.NoError(t, w.WriteBatch(ctx, events), "a batch redelivered after a crash")
	mixed := append([]event.Event{events[5], events[17]}, event.Event{ID: "new", UID: "u1", PopupID: 1, Action: event.Click, At: now, NextShowAt: now})
	require.NoError(t, w.WriteBatch(ctx, mixed), "two known events and a new one: the new rows are read back")
	var logRows, imps, clicks int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log`).Scan(&logRows))
	require.NoError(t, db.QueryRow(`SELECT COALESCE(SUM(impressions), 0), COALESCE(SUM(clicks), 0) FROM popup_daily_stats`).Scan(&imps, &clicks))
	assert.Equal(t, 61, logRows)
	assert.Equal(t, 60, imps, "each impression once")
	assert.Equal(t, 1, clicks)
}

func TestMigration15PartitionsALogHoldingRowsAndTheBackfillCopiesTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 14)
	now := time.Now().UTC().Truncate(time.Millisecond)
	// A log as the paced purge left it: rows of the last 20 days, plus ids far below the newest
	// 100,000 (rows the migration leaves to the backfill), one of them older than the retention.
	var times []time.Time
	for d := range 20 {
		times = append(times, now.Add(-time.Duration(d)*24*time.Hour))
	}
	insertLog(t, db, "popup_action_log", "new", times...)
	_, err := db.Exec(`UPDATE popup_action_log SET id = id + 3000000 ORDER BY id DESC`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO popup_action_log (id, event_id, uid, popup_id, action, event_at) VALUES
		(1, 'b1', 'u1', 1, 'click', ?), (2, 'b2', 'u2', 2, 'close', ?), (3, 'gone', 'u3', 1, 'impression', ?)`,
		now.Add(-3*24*time.Hour), now.Add(-19*24*time.Hour), now.Add(-45*24*time.Hour))
	require.NoError(t, err)

	require.NoError(t, mysqlstore.MigrateTo(ctx, db, 15))
	names, rows := logPartitions(t, db)
	assert.Equal(t, dayPartition(now.Add(-45*24*time.Hour)), names[0], "partitions start at the oldest row's day")
	assert.Equal(t, dayPartition(now.Add(7*24*time.Hour)), names[len(names)-2], "and go seven days ahead")
	var total int
	for _, c := range rows {
		total += c
	}
	assert.Equal(t, 20, total, "the newest 100,000 rows are copied by the migration, the others not yet")
	assert.Equal(t, 1, rows[dayPartition(now.Add(-19*24*time.Hour))], "each row in its day")

	// A batch of the old log redelivered now meets its row (the writer of this build needs the
	// later migrations too, as every upgrade runs them before the new worker starts).
	_, err = mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	w := mysqlstore.NewEventWriter(db)
	redelivered := event.Event{ID: "new0", UID: "u0", PopupID: 1, Action: event.Impression, At: now, NextShowAt: now}
	require.NoError(t, w.WriteBatch(ctx, []event.Event{redelivered}))
	var imps int
	require.NoError(t, db.QueryRow(`SELECT COALESCE(SUM(impressions), 0) FROM popup_daily_stats`).Scan(&imps))
	assert.Zero(t, imps, "a redelivered event is not counted again")

	// An erasure while the copy is under way finds the user's rows in both tables, counted once.
	priv := mysqlstore.NewPrivacyRepo(db)
	acts, err := priv.Actions(ctx, "u2")
	require.NoError(t, err)
	assert.Len(t, acts, 4, "u2's three copied rows and its row still in the old table only")
	erased, err := priv.DeleteActions(ctx, "u2")
	require.NoError(t, err)
	assert.Equal(t, int64(4), erased)
	acts, err = priv.Actions(ctx, "u2")
	require.NoError(t, err)
	assert.Empty(t, acts)

	p := mysqlstore.NewLogPartitions(db)
	p.Batch, p.MinPause = 2, time.Millisecond
	var batches []int64
	copied, err := p.Backfill(ctx, now.Add(-30*24*time.Hour), func(n int64) { batches = append(batches, n) })
	require.NoError(t, err)
	assert.Equal(t, int64(1), copied, "the row within the retention, not the older one, nor the erased one, nor the rows copied already")
	for _, n := range batches {
		assert.LessOrEqual(t, n, int64(2))
	}
	var n int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log`).Scan(&n))
	assert.Equal(t, 21-3, n, "the 20 copied and the backfilled one, less u2's three")
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log WHERE event_id = 'gone'`).Scan(&n))
	assert.Zero(t, n)
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'popup_action_log_unpartitioned'`).Scan(&n))
	assert.Zero(t, n, "the old table is dropped once copied")
	again, err := p.Backfill(ctx, now.Add(-30*24*time.Hour), nil)
	require.NoError(t, err)
	assert.Zero(t, again)

	// Down puts every row back into one table.
	require.NoError(t, mysqlstore.MigrateDownTo(ctx, db, 14))
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log`).Scan(&n))
	assert.Equal(t, 18, n)
}
