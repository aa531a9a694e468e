package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// LogPartitions keeps the action log's day partitions (migration 00015) and removes the days
// past the retention whole, where a DELETE would visit every row and every index entry.
//
// The log is RANGE-partitioned on TO_DAYS(event_at): partition pYYYYMMDD holds that UTC day
// (VALUES LESS THAN the next day's number), and pmax, the last, everything later. The first
// partition also holds everything before its day (a RANGE partition starts where the one before
// it ends), so no event time is ever refused. Maintain adds the days up to Ahead days from now by
// splitting pmax, which no row reaches while the days ahead exist, so the split moves nothing.
//
// A day leaves the log without its file's removal under the log's lock: its partition becomes a
// table of its own, a twin, by a rename of files, and the twin is dropped afterwards, when the
// log's metadata lock is no longer held, so the drain's batches do not wait for the file's
// removal (docs/PERFORMANCE.md "Retention"). On MariaDB 10.7 and later one statement does it
// (ALTER TABLE … CONVERT PARTITION … TO TABLE); elsewhere (MySQL 8.0) the partition is exchanged
// with an empty twin and then dropped, empty. The twins are named
// popup_action_log_retired_pYYYYMMDD; a run killed between the steps leaves a twin, or an empty
// partition past the cutoff, and the next run drops both.
//
// Every worker runs Maintain; a named lock (GET_LOCK) lets one at a time alter the table and the
// others skip that run.
type LogPartitions struct {
	db *sql.DB
	// Ahead is how many days after today have their partition ready.
	Ahead int
	// Batch is the most rows one backfill statement copies (its transaction holds their locks).
	Batch int
	// MinPause is the least time between two backfill statements; after one that took longer,
	// the backfill pauses as long as it took, so it uses at most half of one connection's time.
	MinPause time.Duration

	// afterStep, when set (tests only), is called after each step of a day's detachment; an
	// error stops the run there, as a worker killed at that point would.
	afterStep func(step string) error
	// exchangeOnly (tests only) takes the days out the MySQL 8.0 way on MariaDB too.
	exchangeOnly bool
}

// NewLogPartitions returns a keeper with seven days ahead and backfill batches of 1,000 rows at
// most every 20 ms.
func NewLogPartitions(db *sql.DB) *LogPartitions {
	return &LogPartitions{db: db, Ahead: 7, Batch: 1000, MinPause: 20 * time.Millisecond}
}

// partitionLock prefixes the name of the lock that serialises the workers' changes to the log's
// partitions; the rest is the MD5 of the database's name (lockName). GET_LOCK's names are the
// server's, not a database's: without it two deployments on one server, or tests each in a
// database of their own, would make each other skip. (A worker of an older release takes the
// bare prefix: during a rolling upgrade one old and one new worker may alter the log at once, and
// the later ALTER fails on a day the other just added or removed, logged, until the next run.)
const partitionLock = "popup_action_log_partitions:"

// lockName is the SQL expression of the lock's name: prefix and MD5 (32 characters) of the
// current database's name, within GET_LOCK's 64.
const lockName = `CONCAT(?, MD5(DATABASE()))`

// tableLogUnpartitioned is the log as it was before migration 00015, until Backfill has copied it.
const tableLogUnpartitioned = "popup_action_log_unpartitioned"

// dayPartition is one partition of the log: the UTC days before bound (a TO_DAYS number); the
// last partition, pmax, has no bound.
type dayPartition struct {
	name  string
	bound int64 // 0 for pmax
}

// retiredPrefix begins the name of a twin table holding a day taken out of the log:
// popup_action_log_retired_p20261127. Only Maintain makes them, under the named lock.
const retiredPrefix = TableActionLog + "_retired_"

// Maintenance is what one Maintain run did.
type Maintenance struct {
	Added   []string // partitions made, oldest first
	Dropped []string // partitions dropped, oldest first
	Skipped bool     // another worker held the lock; nothing was looked at
	// Detaching is how long the log's own statements took to take the dropped days out (their
	// exchange and the empty partitions' drop: the time the drain's writes may wait for the
	// log's metadata lock); Removing, how long dropping the twin tables that held those days took
	// (their files' removal, under the twins' own locks).
	Detaching, Removing time.Duration
}

// Maintain makes the partitions of every day from the retention's first to Ahead days after now,
// and drops every partition whose days all end before cutoff's day: a row is kept at least until
// cutoff passes its time, and at most one day longer. It first drops the twins a run killed
// between its steps left behind (their days were past the retention when it took them out).
func (p *LogPartitions) Maintain(ctx context.Context, now, cutoff time.Time) (m Maintenance, err error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return m, fmt.Errorf("action log partitions: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(`+lockName+`, 0)`, partitionLock).Scan(&got); err != nil {
		return m, fmt.Errorf("action log partitions: lock: %w", err)
	}
	if got.Int64 != 1 {
		m.Skipped = true
		return m, nil
	}
	defer func() {
		// On a connection that failed the lock may already be gone with its session.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `DO RELEASE_LOCK(`+lockName+`)`, partitionLock)
	}()
	// An ALTER waits for the batches writing the log to end; it must not wait for ever.
	if _, err := conn.ExecContext(ctx, `SET SESSION lock_wait_timeout = 10`); err != nil {
		return m, fmt.Errorf("action log partitions: %w", err)
	}
	start := time.Now()
	if err := dropRetired(ctx, conn); err != nil {
		return m, err
	}
	m.Removing = time.Since(start)
	parts, err := readPartitions(ctx, conn)
	if err != nil {
		return m, err
	}
	if m.Added, err = addDays(ctx, conn, parts, toDays(cutoff), toDays(now)+int64(p.Ahead)); err != nil {
		return m, err
	}
	m.Dropped, m.Detaching, err = p.detachDays(ctx, conn, parts, toDays(cutoff))
	if err != nil || len(m.Dropped) == 0 {
		return m, err
	}
	start = time.Now()
	err = dropRetired(ctx, conn)
	m.Removing += time.Since(start)
	return m, err
}

// Days reads the first and the last UTC day the log has a day partition for (the first also
// holds everything before it; pmax everything after the last): what the status shows of the
// retention. Both are zero when the log has no day partition.
func (p *LogPartitions) Days(ctx context.Context) (first, last time.Time, err error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return first, last, fmt.Errorf("action log partitions: %w", err)
	}
	defer conn.Close()
	parts, err := readPartitions(ctx, conn)
	if err != nil || len(parts) < 2 {
		return first, last, err
	}
	day := func(bound int64) time.Time { return time.Unix((bound-1-toDaysEpoch)*86400, 0).UTC() }
	return day(parts[0].bound), day(parts[len(parts)-2].bound), nil
}

// readPartitions lists the log's partitions in order, pmax last.
func readPartitions(ctx context.Context, conn *sql.Conn) ([]dayPartition, error) {
	rows, err := conn.QueryContext(ctx, `SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM information_schema.PARTITIONS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY PARTITION_ORDINAL_POSITION`, TableActionLog)
	if err != nil {
		return nil, fmt.Errorf("action log partitions: %w", err)
	}
	defer rows.Close()
	var parts []dayPartition
	for rows.Next() {
		var name, desc sql.NullString
		if err := rows.Scan(&name, &desc); err != nil {
			return nil, fmt.Errorf("action log partitions: %w", err)
		}
		if !name.Valid {
			return nil, fmt.Errorf("action log partitions: %w: %s is not partitioned (migration 00015)", ErrSchema, TableActionLog)
		}
		part := dayPartition{name: name.String}
		if desc.String != "MAXVALUE" {
			if part.bound, err = strconv.ParseInt(desc.String, 10, 64); err != nil {
				return nil, fmt.Errorf("action log partitions: partition %s bound %q: %w", name.String, desc.String, err)
			}
		}
		parts = append(parts, part)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("action log partitions: %w", err)
	}
	if len(parts) == 0 || parts[len(parts)-1].bound != 0 {
		return nil, fmt.Errorf("action log partitions: %w: no pmax partition", ErrSchema)
	}
	return parts, nil
}

// addDays splits pmax into one partition per day up to and including last: from the day after
// the last day partition, or from first when there is none.
func addDays(ctx context.Context, conn *sql.Conn, parts []dayPartition, first, last int64) ([]string, error) {
	from := first
	if len(parts) > 1 {
		from = parts[len(parts)-2].bound // the day after the last day partition
	}
	if from > last {
		return nil, nil
	}
	var names []string
	var q strings.Builder
	q.WriteString("ALTER TABLE " + TableActionLog + " REORGANIZE PARTITION pmax INTO (")
	for d := from; d <= last; d++ {
		name := dayName(d)
		names = append(names, name)
		fmt.Fprintf(&q, "PARTITION %s VALUES LESS THAN (%d), ", name, d+1)
	}
	q.WriteString("PARTITION pmax VALUES LESS THAN MAXVALUE)")
	if _, err := conn.ExecContext(ctx, q.String()); err != nil {
		return nil, fmt.Errorf("action log partitions: add %s…%s: %w", names[0], names[len(names)-1], err)
	}
	return names, nil
}

// Steps of a day's detachment, for the tests that stop a run after one as a killed worker would.
const (
	stepConverted = "converted"
	stepTwinMade  = "twin made"
	stepExchanged = "exchanged"
	stepDropped   = "partitions dropped"
)

// detachDays takes the day partitions whose days all end at or before the day cutoff (their
// bound, the day after their last, is at most cutoff) out of the log, each into a twin table
// that then holds the day. It returns the partitions taken out and how long the log's
// statements took.
func (p *LogPartitions) detachDays(ctx context.Context, conn *sql.Conn, parts []dayPartition, cutoff int64) (names []string, took time.Duration, err error) {
	for _, part := range parts {
		if part.bound != 0 && part.bound <= cutoff {
			names = append(names, part.name)
		}
	}
	if len(names) == 0 {
		return nil, 0, nil
	}
	var version string
	if err := conn.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return nil, 0, fmt.Errorf("action log partitions: %w", err)
	}
	if p.exchangeOnly || !convertsPartitions(version) {
		return p.exchangeDays(ctx, conn, names)
	}
	for _, name := range names {
		start := time.Now()
		_, err := conn.ExecContext(ctx, "ALTER TABLE "+TableActionLog+" CONVERT PARTITION "+name+" TO TABLE "+retiredPrefix+name)
		took += time.Since(start)
		if err != nil {
			return nil, took, fmt.Errorf("action log partitions: take %s out: %w", name, err)
		}
		if err := p.step(stepConverted); err != nil {
			return nil, took, err
		}
	}
	return names, took, nil
}

// convertsPartitions reports whether the server of version (SELECT VERSION()) has ALTER TABLE …
// CONVERT PARTITION … TO TABLE: MariaDB from 10.7.
func convertsPartitions(version string) bool {
	if !strings.Contains(version, "MariaDB") {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 10 || (major == 10 && minor >= 7)
}

// exchangeDays takes the partitions names out of the log where CONVERT PARTITION is missing: each
// is exchanged with an empty twin table, which then holds the day, and the partitions, empty now,
// are dropped in one statement.
func (p *LogPartitions) exchangeDays(ctx context.Context, conn *sql.Conn, names []string) (_ []string, took time.Duration, err error) {
	for _, name := range names {
		twin := retiredPrefix + name
		// The twin is a copy of the log's definition without its partitions, as EXCHANGE
		// wants it; made empty, so the exchange has no row to check.
		if _, err := conn.ExecContext(ctx, "CREATE TABLE "+twin+" LIKE "+TableActionLog); err != nil {
			return nil, took, fmt.Errorf("action log partitions: make %s: %w", twin, err)
		}
		if _, err := conn.ExecContext(ctx, "ALTER TABLE "+twin+" REMOVE PARTITIONING"); err != nil {
			return nil, took, fmt.Errorf("action log partitions: make %s: %w", twin, err)
		}
		if err := p.step(stepTwinMade); err != nil {
			return nil, took, err
		}
		start := time.Now()
		_, err := conn.ExecContext(ctx, "ALTER TABLE "+TableActionLog+" EXCHANGE PARTITION "+name+" WITH TABLE "+twin)
		took += time.Since(start)
		if err != nil {
			return nil, took, fmt.Errorf("action log partitions: take %s out: %w", name, err)
		}
		if err := p.step(stepExchanged); err != nil {
			return nil, took, err
		}
	}
	start := time.Now()
	_, err = conn.ExecContext(ctx, "ALTER TABLE "+TableActionLog+" DROP PARTITION "+strings.Join(names, ", "))
	took += time.Since(start)
	if err != nil {
		return nil, took, fmt.Errorf("action log partitions: drop %s: %w", strings.Join(names, ", "), err)
	}
	return names, took, p.step(stepDropped)
}

// step calls the tests' hook, if any, after a step of detachDays.
func (p *LogPartitions) step(name string) error {
	if p.afterStep == nil {
		return nil
	}
	return p.afterStep(name)
}

// dropRetired drops every twin table of a day taken out of the log.
func dropRetired(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ? ORDER BY TABLE_NAME`, retiredPrefix+"%")
	if err != nil {
		return fmt.Errorf("action log partitions: list retired days: %w", err)
	}
	var twins []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("action log partitions: list retired days: %w", err)
		}
		if strings.HasPrefix(name, retiredPrefix) { // LIKE's _ is any character
			twins = append(twins, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("action log partitions: list retired days: %w", err)
	}
	for _, twin := range twins {
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+twin); err != nil {
			return fmt.Errorf("action log partitions: drop %s: %w", twin, err)
		}
	}
	return nil
}

// toDaysEpoch is TO_DAYS('1970-01-01'): MySQL counts days from year 0.
const toDaysEpoch = 719528

// toDays is MySQL's TO_DAYS of t's UTC date.
func toDays(t time.Time) int64 { return floorDiv(t.Unix(), 86400) + toDaysEpoch }

// dayName is the partition name of a TO_DAYS day: p and its UTC date, p20261127.
func dayName(d int64) string {
	return "p" + time.Unix((d-toDaysEpoch)*86400, 0).UTC().Format("20060102")
}

// Backfill copies the rows of the log as it was before migration 00015 whose event time is on or
// after cutoff into the partitioned log, newest first, in paced batches, and drops the old table
// once it is empty. Each batch's rows leave the old table in the transaction that copies them, so
// a backfill stopped anywhere goes on where it was; a row already copied (the migration copies the
// newest 100,000) meets its key and is not copied twice. It returns the rows copied; onRows is
// called after each batch. Without the old table it does nothing.
func (p *LogPartitions) Backfill(ctx context.Context, cutoff time.Time, onRows func(int64)) (copied int64, err error) {
	batch := int64(max(p.Batch, 1))
	for {
		var hi sql.NullInt64
		err := p.db.QueryRowContext(ctx, `SELECT MAX(id) FROM `+tableLogUnpartitioned).Scan(&hi)
		if isNoTable(err) {
			return copied, nil
		}
		if err != nil {
			return copied, fmt.Errorf("action log backfill: %w", err)
		}
		if !hi.Valid {
			if _, err := p.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+tableLogUnpartitioned); err != nil {
				return copied, fmt.Errorf("action log backfill: drop the copied table: %w", err)
			}
			return copied, nil
		}
		start := time.Now()
		n, err := p.copyBatch(ctx, hi.Int64-batch, hi.Int64, cutoff)
		if err != nil {
			return copied, err
		}
		copied += n
		if onRows != nil && n > 0 {
			onRows(n)
		}
		t := time.NewTimer(max(p.MinPause, time.Since(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return copied, ctx.Err()
		case <-t.C:
		}
	}
}

// copyBatch copies the old table's rows with lo < id <= hi and an event time on or after cutoff
// into the log (a row whose key the log holds stays as it is), and removes them all from the old
// table, in one transaction.
func (p *LogPartitions) copyBatch(ctx context.Context, lo, hi int64, cutoff time.Time) (n int64, err error) {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("action log backfill: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	res, err := tx.ExecContext(ctx, `INSERT INTO `+TableActionLog+`
		(event_id, uid, popup_id, action, event_at, decision_id, created_at, batch_id, button)
		SELECT o.event_id, o.uid, o.popup_id, o.action, o.event_at, o.decision_id, o.created_at, o.batch_id, o.button
		FROM `+tableLogUnpartitioned+` AS o WHERE o.id > ? AND o.id <= ? AND o.event_at >= ?
		ON DUPLICATE KEY UPDATE batch_id = `+TableActionLog+`.batch_id`, lo, hi, toDB(cutoff))
	if err != nil {
		return 0, fmt.Errorf("action log backfill: copy ids %d…%d: %w", lo+1, hi, err)
	}
	n, _ = res.RowsAffected()
	if _, err = tx.ExecContext(ctx, `DELETE FROM `+tableLogUnpartitioned+` WHERE id > ? AND id <= ?`, lo, hi); err != nil {
		return 0, fmt.Errorf("action log backfill: remove ids %d…%d: %w", lo+1, hi, err)
	}
	if err = tx.Commit(); err != nil {
		return 0, fmt.Errorf("action log backfill: %w", err)
	}
	return n, nil
}

// isNoTable reports MySQL's "table doesn't exist" (1146).
func isNoTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}
