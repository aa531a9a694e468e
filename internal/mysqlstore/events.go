package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"popupsvc/internal/backoff"
	"popupsvc/internal/event"
	"popupsvc/internal/privacy"
)

// EventWriter writes queued events to the action log and the per-user state table. Every write is
// idempotent: the action log is de-duplicated by (uid, event_id) and the state is max-merged, so a batch
// written twice, or batches written out of order, leave the same rows as one ordered write.
type EventWriter struct {
	db *sql.DB
	// OnRows, when set, is told after each commit how many rows it wrote per table: new action
	// log rows (duplicates excluded) and upserted user-state rows. Metrics hook it.
	OnRows func(table string, rows int64)
	// Attempts bounds the quick retries of a deadlock, lock wait timeout or lost connection
	// within one call (the caller retries further with its own back-off).
	Attempts int
	// Erased, when set (POPUP_PRIVACY_KEY), makes every batch drop the events of erased users
	// against their tombstones (dropErased); OnErased is told how many a commit dropped.
	Erased   *privacy.Keyed
	OnErased func(events int)
}

// NewEventWriter returns a writer over db.
func NewEventWriter(db *sql.DB) *EventWriter {
	return &EventWriter{db: db, Attempts: 4}
}

// Table names, as reported to OnRows.
const (
	TableActionLog = "popup_action_log"
	TableUserState = "popup_user_state"
)

// WriteBatch writes events in one transaction: an insert into the action log that skips known
// (uid, event_id) pairs, an upsert of the user state with the events merged per (uid, popup_id)
// beforehand, and the daily counters and the experiment rollup (exprollup.go) of the events the
// log newly accepted (see dailyCount).
// Rows go in key order, so that concurrent writers lock in the same order and do not deadlock
// each other. A *PermanentError means some event of the batch is rejected by the database
// whatever the retries; any other error is worth retrying.
//
// Statement size: a row is at most maxRowBytes on the wire, and a statement has at most one row per
// event, or per experiment arm an event names (popup_experiment_user: up to event.MaxArmRefs per
// event), so the largest batch the config allows (5,000) stays under 5 MiB, well under the default
// max_allowed_packet (16 MiB on MariaDB 10.11, 64 MiB on MySQL 8.0); CheckBatchSize verifies it
// against the server at start.
func (w *EventWriter) WriteBatch(ctx context.Context, events []event.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := checkTimes(events); err != nil {
		return err
	}
	return w.retry(ctx, func() error {
		// A fresh batch id per attempt: the rows carrying it are the ones this attempt inserted.
		res, err := w.tx(ctx, newBatchID(), events)
		if err == nil && w.OnRows != nil {
			w.OnRows(TableActionLog, res.inserted)
			w.OnRows(TableUserState, int64(res.states))
		}
		if err == nil && res.erased > 0 && w.OnErased != nil {
			w.OnErased(res.erased)
		}
		return err
	})
}

// maxRowBytes bounds one row of any statement on the wire: three 64-byte ids (or a salt, a uid and
// an arm key), each escaped to at most twice its length, plus numbers and times.
const maxRowBytes = 512

// CheckBatchSize refuses a batch size whose statements could exceed the server's
// max_allowed_packet (the server would drop the connection on every attempt).
func (w *EventWriter) CheckBatchSize(ctx context.Context, n int) error {
	var packet int64
	if err := w.db.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&packet); err != nil {
		return fmt.Errorf("read max_allowed_packet: %w", err)
	}
	if need := int64(n)*event.MaxArmRefs*maxRowBytes + 1024; need > packet {
		return fmt.Errorf("batches of %d events need statements up to %d bytes, over the server's max_allowed_packet of %d: lower POPUP_WORKER_BATCH_SIZE or raise max_allowed_packet", n, need, packet)
	}
	return nil
}

// WriteOneByOne writes events one at a time, each in its own transaction of single-row
// statements: what a naive worker does. It exists as the benchmark's baseline.
func (w *EventWriter) WriteOneByOne(ctx context.Context, events []event.Event) error {
	for i := range events {
		if err := w.WriteBatch(ctx, events[i:i+1]); err != nil {
			return err
		}
	}
	return nil
}

// txResult is what one batch transaction wrote: new action-log rows, user-state rows, and the
// events of erased users it dropped.
type txResult struct {
	inserted int64
	states   int
	erased   int
}

func (w *EventWriter) tx(ctx context.Context, batch uint64, events []event.Event) (out txResult, err error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return out, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if w.Erased != nil {
		if events, out.erased, err = dropErased(ctx, tx, w.Erased, events); err != nil {
			return out, err
		}
		if len(events) == 0 {
			return out, tx.Commit()
		}
	}
	// Conversions last: within one batch, the exposures they may count for are written first.
	events, convs := splitConversions(events)
	if len(events) > 0 {
		if out.inserted, out.states, err = w.display(ctx, tx, batch, events); err != nil {
			return out, err
		}
	}
	if err = writeConversions(ctx, tx, batch, convs); err != nil {
		return out, err
	}
	return out, tx.Commit()
}

// display writes the display events of a batch (no conversion) in its transaction tx: the action
// log, the user state, the daily and slot stats and the experiment rollup. It returns the new
// action-log rows and the user-state rows written.
func (w *EventWriter) display(ctx context.Context, tx *sql.Tx, batch uint64, events []event.Event) (inserted int64, states int, err error) {
	locales, err := eventLocales(ctx, tx, events)
	if err != nil {
		return 0, 0, err
	}
	rows := logRows(events)
	logQ, logArgs := actionLogInsert(events, locales, rows, batch)
	res, err := tx.ExecContext(ctx, logQ, logArgs...)
	if err != nil {
		return 0, 0, err
	}
	// Affected rows count 1 per inserted row and 0 per known one left as it was (Connect turns
	// the driver's found-rows counting off).
	inserted, _ = res.RowsAffected()
	// (a batch of holdout events alone changes no popup's state: no statement)
	if stateQ, stateArgs, n := userStateUpsert(events); n > 0 {
		if _, err = tx.ExecContext(ctx, stateQ, stateArgs...); err != nil {
			return 0, 0, err
		}
		states = n
	}
	var news []newRow
	switch {
	case inserted == 0:
		// A batch written again after a crash: nothing new, nothing to count.
	case inserted == int64(len(rows)) && exactMillis(events, rows):
		news = make([]newRow, len(rows))
		for n, i := range rows {
			news[n] = newRow{i: i, at: toDB(events[i].At)}
		}
	default:
		if news, err = readNewRows(ctx, tx, batch, events, rows); err != nil {
			return 0, 0, err
		}
	}
	daily, slots := countEvents(events, news)
	if err = addDailyStats(ctx, tx, daily); err != nil {
		return 0, 0, err
	}
	if err = addSlotStats(ctx, tx, slots); err != nil {
		return 0, 0, err
	}
	if err = addLocaleStats(ctx, tx, countLocales(events, locales, news)); err != nil {
		return 0, 0, err
	}
	if err = addExperimentCounts(ctx, tx, batch, events, news); err != nil {
		return 0, 0, err
	}
	return inserted, states, nil
}

// The daily stats count each event once, in the transaction that makes it part of the action
// log: the events the log newly accepted. A batch redelivered after a crash between commit and
// acknowledgement, an event repeated within a batch, or the same events written by two workers
// at once therefore count once. Which rows of the multi-row insert were new:
//
//   - none, when the insert affected no row (the common redelivery);
//   - all, when it affected as many rows as the statement has (the common case: the counts are
//     taken from the events themselves, no read at all);
//   - otherwise, the rows of this batch's keys that carry this attempt's batch id: a known
//     (uid, event_id) keeps its old row and its old batch id. readNewRows reads them, a range
//     of the (uid, event_id) key, with a plain consistent read that sees this transaction's own
//     rows and locks nothing (an INSERT ... SELECT would take shared locks on the log).
//
// The same new events are counted twice over: per popup and UTC day (popup_daily_stats, the
// contract's UTC table) and per popup, UTC quarter hour and button (popup_slot_stats, which any
// time zone's days are sums of). The per-batch id costs a column and no index. An event's time is
// fixed when it is queued, so a batch written again meets its own rows, on the same days, for as
// long as the retention keeps them (LogPartitions).

// dailyCount is one popup_daily_stats increment.
type dailyCount struct {
	popupID          int64
	day              string // YYYY-MM-DD, UTC
	imp, clicks, cls int64
}

// slotCount is one popup_slot_stats increment: button -1 carries the slot's impressions, closes
// and unspecified clicks, button n >= 0 the clicks on button n.
type slotCount struct {
	popupID          int64
	slot             time.Time // UTC start of the quarter hour
	button           int
	imp, clicks, cls int64
}

// SlotLength is the span of one popup_slot_stats row: every UTC offset in use is a multiple of it,
// so every time zone's day is a whole number of slots.
const SlotLength = 15 * time.Minute

// NoButton is the button column's value for impressions, closes and clicks that named no button.
const NoButton = -1

// buttonColumn is e's value of the button columns.
func buttonColumn(e *event.Event) int {
	if i, ok := e.Button.Index(); ok && e.Action == event.Click {
		return i
	}
	return NoButton
}

// newRow is an event the action log newly accepted, with its time as the log stores it.
type newRow struct {
	i  int // index in the batch
	at time.Time
}

// newBatchID returns a random non-zero batch id (rows written before batch ids existed hold 0).
// 63 random bits: two batches sharing one is not a practical concern.
func newBatchID() uint64 { return rand.Uint64()>>1 | 1 }

// exactMillis reports whether every row's time is whole milliseconds (as queued events are), so
// that the stored DATETIME(3), and its day, is the time itself on every server (MySQL rounds
// finer times, MariaDB truncates them).
func exactMillis(events []event.Event, rows []int) bool {
	for _, i := range rows {
		if toDB(events[i].At).Nanosecond()%int(time.Millisecond) != 0 {
			return false
		}
	}
	return true
}

// countEvents counts the newly accepted events per popup and UTC day, in (popup_id, day) order,
// and per popup, UTC quarter hour and button, in primary-key order.
func countEvents(events []event.Event, news []newRow) ([]dailyCount, []slotCount) {
	if len(news) == 0 {
		return nil, nil
	}
	type dayKey struct {
		popupID int64
		day     int64 // unix day
	}
	type slotKey struct {
		popupID int64
		slot    int64 // unix quarter hour
		button  int
	}
	dayIdx := make(map[dayKey]int, 8)
	slotIdx := make(map[slotKey]int, 8)
	var days []dailyCount
	var slots []slotCount
	for _, r := range news {
		e := &events[r.i]
		if e.Action == event.Exposure || e.Action == event.Holdout {
			continue // not an impression: a control or held-out user was shown nothing (docs/CONTRACT.md §10, §15)
		}
		sec := r.at.Unix()
		dk := dayKey{e.PopupID, floorDiv(sec, 86400)}
		d, ok := dayIdx[dk]
		if !ok {
			d = len(days)
			dayIdx[dk] = d
			days = append(days, dailyCount{popupID: e.PopupID, day: r.at.Format(time.DateOnly)})
		}
		slotSec := int64(SlotLength / time.Second)
		sk := slotKey{e.PopupID, floorDiv(sec, slotSec), buttonColumn(e)}
		s, ok := slotIdx[sk]
		if !ok {
			s = len(slots)
			slotIdx[sk] = s
			slots = append(slots, slotCount{popupID: e.PopupID, slot: time.Unix(sk.slot*slotSec, 0).UTC(), button: sk.button})
		}
		switch e.Action {
		case event.Impression:
			days[d].imp++
			slots[s].imp++
		case event.Click:
			days[d].clicks++
			slots[s].clicks++
		case event.Close:
			days[d].cls++
			slots[s].cls++
		}
	}
	slices.SortFunc(days, func(a, b dailyCount) int {
		return cmp.Or(cmp.Compare(a.popupID, b.popupID), strings.Compare(a.day, b.day))
	})
	slices.SortFunc(slots, func(a, b slotCount) int {
		return cmp.Or(cmp.Compare(a.popupID, b.popupID), a.slot.Compare(b.slot), cmp.Compare(a.button, b.button))
	})
	return days, slots
}

// floorDiv is a / b rounded down (times before 1970 included).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// readNewRows reads which of this batch's rows this attempt inserted (they carry its batch id),
// with their stored times.
func readNewRows(ctx context.Context, tx *sql.Tx, batch uint64, events []event.Event, rows []int) ([]newRow, error) {
	var q strings.Builder
	q.Grow(128 + len(rows)*6)
	// The time range lets MySQL read only the partitions of the batch's days (migration 00015),
	// a millisecond wider each way for a server that rounds finer times.
	first, last := toDB(events[rows[0]].At), toDB(events[rows[0]].At)
	for _, i := range rows {
		switch at := toDB(events[i].At); {
		case at.Before(first):
			first = at
		case at.After(last):
			last = at
		}
	}
	q.WriteString(`SELECT uid, event_id, event_at FROM popup_action_log WHERE batch_id = ? AND event_at BETWEEN ? AND ? AND (uid, event_id) IN (`)
	args := make([]any, 0, 3+2*len(rows))
	args = append(args, batch, first.Add(-time.Millisecond), last.Add(time.Millisecond))
	args = appendLogKeys(&q, args, events, rows, func(e *event.Event) string { return e.ID })
	res, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	type key struct{ uid, id string }
	at := make(map[key]time.Time)
	for res.Next() {
		var k key
		var t time.Time
		if err := res.Scan(&k.uid, &k.id, &t); err != nil {
			return nil, err
		}
		at[k] = t
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	out := make([]newRow, 0, len(at))
	for _, i := range rows {
		if t, ok := at[key{events[i].UID, events[i].ID}]; ok {
			out = append(out, newRow{i: i, at: t.UTC()})
		}
	}
	return out, nil
}

// appendLogKeys ends an `(uid, event_id) IN (` list of the action log's key with one (uid, id)
// pair per event of idx, the id its own or one it names (id), and appends them to args.
func appendLogKeys(q *strings.Builder, args []any, events []event.Event, idx []int, id func(*event.Event) string) []any {
	for n, i := range idx {
		if n > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?)")
		args = append(args, events[i].UID, id(&events[i]))
	}
	q.WriteByte(')')
	return args
}

// addSlotStats adds counts to popup_slot_stats, rows in primary-key order so that concurrent
// writers take the counter rows' locks in the same order.
func addSlotStats(ctx context.Context, tx *sql.Tx, counts []slotCount) error {
	args := make([]any, 0, len(counts)*6)
	for _, c := range counts {
		args = append(args, c.popupID, c.slot, c.button, c.imp, c.clicks, c.cls)
	}
	return addCounts(ctx, tx, "popup_slot_stats", []string{"popup_id", "slot_start", "button"}, eventCounts, args)
}

// addDailyStats adds counts to popup_daily_stats, rows in primary-key order so that concurrent
// writers take the counter rows' locks in the same order.
func addDailyStats(ctx context.Context, tx *sql.Tx, counts []dailyCount) error {
	args := make([]any, 0, len(counts)*5)
	for _, c := range counts {
		args = append(args, c.popupID, c.day, c.imp, c.clicks, c.cls)
	}
	return addCounts(ctx, tx, "popup_daily_stats", []string{"popup_id", "day"}, eventCounts, args)
}

// eventCounts are the count columns of popup_daily_stats and popup_slot_stats.
var eventCounts = []string{"impressions", "clicks", "closes"}

// addCounts is the one upsert of the stats tables: rows of the values of keys, then of counts,
// into table, each count added to the row its key already has.
func addCounts(ctx context.Context, tx *sql.Tx, table string, keys, counts []string, args []any) error {
	if len(args) == 0 {
		return nil
	}
	width := len(keys) + len(counts)
	row := "(" + strings.Repeat("?,", width-1) + "?)"
	var q strings.Builder
	q.Grow(256 + len(args)/width*(len(row)+1))
	q.WriteString("INSERT INTO " + table + " (" + strings.Join(keys, ", ") + ", " + strings.Join(counts, ", ") + ") VALUES ")
	for n := 0; n < len(args); n += width {
		if n > 0 {
			q.WriteByte(',')
		}
		q.WriteString(row)
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE ")
	for _, c := range counts {
		q.WriteString(c + " = " + c + " + VALUES(" + c + "), ")
	}
	q.WriteString("updated_at = CURRENT_TIMESTAMP(3)")
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// maxDatetime bounds a DATETIME column; the driver refuses later times before the server sees them.
var maxDatetime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)

// checkTimes refuses, as permanent, an event time no DATETIME column can hold.
func checkTimes(events []event.Event) error {
	for i := range events {
		e := &events[i]
		if !e.At.Before(maxDatetime) || !e.NextShowAt.Before(maxDatetime) {
			return &PermanentError{Err: fmt.Errorf("event %q: time beyond the DATETIME range (year 9999)", e.ID)}
		}
	}
	return nil
}

// logRows returns the indexes of the events the action-log statement writes: one per
// (uid, event_id), the first queued of any repeats, sorted by (uid, event_id), the order of the
// unique key. An event_id is the client's key for one uid only: two users sending the same
// event_id are two events, and both rows are written.
func logRows(events []event.Event) []int {
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	key := func(a, b int) int {
		return cmp.Or(strings.Compare(events[a].UID, events[b].UID), strings.Compare(events[a].ID, events[b].ID))
	}
	slices.SortStableFunc(order, key)
	return slices.CompactFunc(order, func(a, b int) bool { return key(a, b) == 0 })
}

// actionLogInsert builds the action-log statement of rows (see logRows). A (uid, event_id)
// already in the log is skipped by a no-op update rather than INSERT IGNORE: IGNORE would also
// turn a bad value into a warning and store it truncated or replaced (two different non-ASCII
// ids could collapse into one and an event would vanish), where a plain error sends the event to
// the dead-letter list. The no-op update also keeps the known row's batch_id, which is how the
// daily stats tell new rows from known ones: it must never set batch_id. locales are the events'
// (eventLocales).
func actionLogInsert(events []event.Event, locales []string, rows []int, batch uint64) (string, []any) {
	var q strings.Builder
	q.Grow(128 + len(rows)*50)
	q.WriteString("INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at, decision_id, locale, batch_id, button) VALUES ")
	args := make([]any, 0, len(rows)*7)
	// The batch id is the same number in every row, and the button a small one: both are written
	// into the statement, not bound per row.
	tail := strconv.AppendUint([]byte(",?,?,?,?,?,?,"), batch, 10)
	tail = append(tail, ',')
	var num [8]byte
	for n, i := range rows {
		e := &events[i]
		if n > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?")
		q.Write(tail)
		q.Write(strconv.AppendInt(num[:0], int64(buttonColumn(e)), 10))
		q.WriteByte(')')
		args = append(args, e.ID, e.UID, e.PopupID, string(e.Action), toDB(e.At), e.DecisionID, locales[i])
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE id = id")
	return q.String(), args
}

// userStateUpsert builds the user-state statement. Every column only moves forward (GREATEST),
// so a replayed or reordered event never moves next_show_at back. VALUES() rather than the
// `AS new` row alias: the alias does not parse on MariaDB, VALUES() runs on both (MySQL 8.0
// warns that it is deprecated, nothing more).
func userStateUpsert(events []event.Event) (string, []any, int) {
	rows := event.FoldStates(events)
	var q strings.Builder
	q.Grow(512 + len(rows)*16)
	q.WriteString("INSERT INTO popup_user_state (uid, popup_id, next_show_at, impressions, last_impression_at, last_click_at, last_close_at, impression_day, day_impressions) VALUES ")
	args := make([]any, 0, len(rows)*9)
	for n := range rows {
		r := &rows[n]
		if n > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?,?,?,?,?)")
		args = append(args, r.UID, r.PopupID, toDB(r.NextShowAt), r.Impressions, toDB(r.LastImpressionAt), toDB(r.LastClickAt), toDB(r.LastCloseAt),
			r.Day, r.DayCount)
	}
	// day_impressions before impression_day: an assignment sees the columns assigned before it.
	q.WriteString(` ON DUPLICATE KEY UPDATE
		day_impressions = IF(VALUES(impression_day) > impression_day, VALUES(day_impressions),
			IF(VALUES(impression_day) = impression_day, GREATEST(day_impressions, VALUES(day_impressions)), day_impressions)),
		impression_day = GREATEST(impression_day, VALUES(impression_day)),
		next_show_at = GREATEST(next_show_at, VALUES(next_show_at)),
		impressions = GREATEST(impressions, VALUES(impressions)),
		last_impression_at = GREATEST(last_impression_at, VALUES(last_impression_at)),
		last_click_at = GREATEST(last_click_at, VALUES(last_click_at)),
		last_close_at = GREATEST(last_close_at, VALUES(last_close_at)),
		updated_at = CURRENT_TIMESTAMP(3)`)
	return q.String(), args, len(rows)
}

// writeRetry spaces the retries of a batch write: short, a deadlock or lock wait clears quickly.
var writeRetry = backoff.Backoff{Min: 10 * time.Millisecond, Max: time.Second}

// retry runs fn, retrying deadlocks, lock wait timeouts and lost connections a few times with a
// short jittered back-off, and classifies the final error.
func (w *EventWriter) retry(ctx context.Context, fn func() error) error {
	attempts := max(w.Attempts, 1)
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		if isPermanent(err) {
			return &PermanentError{Err: err}
		}
		if attempt >= attempts || !isRetryable(err) || ctx.Err() != nil {
			return fmt.Errorf("write events: %w", err)
		}
		if !writeRetry.Sleep(ctx, attempt-1) {
			return fmt.Errorf("write events: %w", errors.Join(err, ctx.Err()))
		}
	}
}

// PermanentError wraps a database error that retrying will not cure: some value of the batch is
// rejected (too long, out of range, not valid in its column's character set...). The caller
// splits the batch to find the event at fault.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "event rejected by MySQL: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks the error for callers that do not import this package (see drain).
func (e *PermanentError) Permanent() bool { return true }

// permanentCodes are MySQL/MariaDB errors caused by a value in a row, not by the server's state.
var permanentCodes = map[uint16]bool{
	1048: true, // ER_BAD_NULL_ERROR: column cannot be null
	1264: true, // ER_WARN_DATA_OUT_OF_RANGE: out of range value for column
	1265: true, // WARN_DATA_TRUNCATED
	1292: true, // ER_TRUNCATED_WRONG_VALUE: incorrect datetime value
	1300: true, // ER_INVALID_CHARACTER_STRING
	1366: true, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD: incorrect string value
	1367: true, // ER_ILLEGAL_VALUE_FOR_TYPE
	1406: true, // ER_DATA_TOO_LONG
	1411: true, // ER_WRONG_VALUE_FOR_TYPE
	1690: true, // ER_DATA_OUT_OF_RANGE
}

// retryableCodes are errors of the server's moment, worth an immediate retry.
var retryableCodes = map[uint16]bool{
	1040: true, // ER_CON_COUNT_ERROR: too many connections
	1053: true, // ER_SERVER_SHUTDOWN
	1205: true, // ER_LOCK_WAIT_TIMEOUT
	1213: true, // ER_LOCK_DEADLOCK
	1927: true, // ER_CONNECTION_KILLED (MariaDB)
	2006: true, // CR_SERVER_GONE_ERROR
	2013: true, // CR_SERVER_LOST
}

func isPermanent(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && permanentCodes[me.Number]
}

// isRetryable: a server error of the moment, or the connection could not be made or broke.
func isRetryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return retryableCodes[me.Number]
	}
	return Unavailable(err) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
