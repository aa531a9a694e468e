package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

type stateRow struct {
	UID                              string
	PopupID                          int64
	NextShowAt                       time.Time
	Impressions                      int
	LastImpression, LastClick, Close time.Time
}

func readStates(t *testing.T, db *sql.DB) []stateRow {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT uid, popup_id, next_show_at, impressions,
		last_impression_at, last_click_at, last_close_at FROM popup_user_state ORDER BY uid, popup_id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []stateRow
	for rows.Next() {
		var r stateRow
		require.NoError(t, rows.Scan(&r.UID, &r.PopupID, &r.NextShowAt, &r.Impressions, &r.LastImpression, &r.LastClick, &r.Close))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func readLog(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT event_id, uid, popup_id, action, event_at, decision_id FROM popup_action_log`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var (
			id, uid, action, decision string
			popupID                   int64
			eventAt                   time.Time
		)
		require.NoError(t, rows.Scan(&id, &uid, &popupID, &action, &eventAt, &decision))
		out[id] = fmt.Sprintf("%s/%d/%s/%s/%s", uid, popupID, action, eventAt.Format(time.RFC3339Nano), decision)
	}
	require.NoError(t, rows.Err())
	return out
}

var never = time.Unix(0, 0).UTC()

func TestWriteBatchStoresTheLogAndOneMergedStateRowPerUserPopup(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	events := []event.Event{
		{ID: "e1", UID: "alice", PopupID: 7, Action: event.Impression, At: at(0), DecisionID: "e1", NextShowAt: at(3600), Impressions: 1},
		{ID: "e2", UID: "alice", PopupID: 7, Action: event.Click, At: at(5), DecisionID: "e1", NextShowAt: at(86400), Impressions: 1},
		{ID: "e3", UID: "alice", PopupID: 7, Action: event.Impression, At: at(2), NextShowAt: at(1800), Impressions: 2},
		{ID: "e4", UID: "bob", PopupID: 7, Action: event.Close, At: at(9).Add(123 * time.Millisecond), NextShowAt: at(100), Impressions: 0},
	}

	require.NoError(t, w.WriteBatch(context.Background(), events))

	assert.Equal(t, []stateRow{
		{UID: "alice", PopupID: 7, NextShowAt: at(86400), Impressions: 2, LastImpression: at(2), LastClick: at(5), Close: never},
		{UID: "bob", PopupID: 7, NextShowAt: at(100), Impressions: 0, LastImpression: never, LastClick: never, Close: at(9).Add(123 * time.Millisecond)},
	}, readStates(t, db))
	assert.Equal(t, map[string]string{
		"e1": "alice/7/impression/2026-03-01T12:00:00Z/e1",
		"e2": "alice/7/click/2026-03-01T12:00:05Z/e1",
		"e3": "alice/7/impression/2026-03-01T12:00:02Z/",
		"e4": "bob/7/close/2026-03-01T12:00:09.123Z/",
	}, readLog(t, db))
}

func TestWriteBatchKeepsOneEventIDOfTwoUsers(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	ctx := context.Background()
	a := event.Event{ID: "shared-evt-1", UID: "user-a", PopupID: 3, Action: event.Click, At: at(1), NextShowAt: at(100), Impressions: 1}
	b := event.Event{ID: "shared-evt-1", UID: "user-b", PopupID: 3, Action: event.Click, At: at(2), NextShowAt: at(200), Impressions: 1}
	inserted := int64(0)
	w.OnRows = func(table string, rows int64) {
		if table == mysqlstore.TableActionLog {
			inserted += rows
		}
	}

	require.NoError(t, w.WriteBatch(ctx, []event.Event{a, b, a}), "in one batch, with a replay of a")
	require.NoError(t, w.WriteBatch(ctx, []event.Event{b}), "and b replayed in a later batch")

	var uids []string
	rows, err := db.QueryContext(ctx, `SELECT uid FROM popup_action_log WHERE event_id = 'shared-evt-1' ORDER BY uid`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var uid string
		require.NoError(t, rows.Scan(&uid))
		uids = append(uids, uid)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"user-a", "user-b"}, uids, "both users' clicks are logged once each")
	assert.Equal(t, int64(2), inserted)
	assert.Equal(t, []stateRow{
		{UID: "user-a", PopupID: 3, NextShowAt: at(100), Impressions: 1, LastImpression: never, LastClick: at(1), Close: never},
		{UID: "user-b", PopupID: 3, NextShowAt: at(200), Impressions: 1, LastImpression: never, LastClick: at(2), Close: never},
	}, readStates(t, db), "both users' state shows the click")
}

// randomEvents returns n events of a few users and popups whose carried state grows with time,
// as the API produces them.
func randomEvents(r *rand.Rand, n int) []event.Event {
	actions := []event.Action{event.Impression, event.Click, event.Close}
	out := make([]event.Event, n)
	for i := range out {
		out[i] = event.Event{
			ID: fmt.Sprintf("ev-%05d", i), UID: fmt.Sprintf("u%d", r.IntN(20)), PopupID: int64(1 + r.IntN(4)),
			Action: actions[r.IntN(3)], At: at(i), NextShowAt: at(i + r.IntN(5000)), Impressions: i / 10,
		}
	}
	return out
}

func TestWriteBatchIsIdempotentAndOrderIndependent(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	events := randomEvents(r, 600)
	ctx := context.Background()
	reference := testenv.MySQL(t)
	require.NoError(t, mysqlstore.NewEventWriter(reference).WriteBatch(ctx, events))
	want, wantLog := readStates(t, reference), readLog(t, reference)
	require.Len(t, wantLog, 600)

	tests := []struct {
		name    string
		batches func() [][]event.Event
	}{
		{"same batch twice", func() [][]event.Event { return [][]event.Event{events, events} }},
		{"batches in reverse order", func() [][]event.Event {
			return [][]event.Event{events[400:], events[200:400], events[:200]}
		}},
		{"shuffled overlapping replays", func() [][]event.Event {
			var out [][]event.Event
			for range 8 {
				lo := r.IntN(500)
				b := append([]event.Event(nil), events[lo:lo+100]...)
				r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
				out = append(out, b)
			}
			return append(out, events[300:], events[:300], events[100:200])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := testenv.MySQL(t)
			w := mysqlstore.NewEventWriter(db)

			for _, b := range tt.batches() {
				require.NoError(t, w.WriteBatch(ctx, b))
			}

			assert.Equal(t, want, readStates(t, db))
			assert.Equal(t, wantLog, readLog(t, db))
		})
	}
}

func TestWriteBatchNeverMovesStateBackwards(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	ctx := context.Background()
	newer := event.Event{ID: "new", UID: "u", PopupID: 1, Action: event.Click, At: at(100), NextShowAt: at(10_000), Impressions: 5}
	older := event.Event{ID: "old", UID: "u", PopupID: 1, Action: event.Click, At: at(50), NextShowAt: at(500), Impressions: 3}

	require.NoError(t, w.WriteBatch(ctx, []event.Event{newer}))
	require.NoError(t, w.WriteBatch(ctx, []event.Event{older}))

	got := readStates(t, db)
	require.Len(t, got, 1)
	assert.Equal(t, at(10_000), got[0].NextShowAt)
	assert.Equal(t, 5, got[0].Impressions)
	assert.Equal(t, at(100), got[0].LastClick)
	assert.Len(t, readLog(t, db), 2, "the older event is still logged")
}

func TestWriteOneByOneLeavesTheSameRowsAsWriteBatch(t *testing.T) {
	t.Parallel()
	events := randomEvents(rand.New(rand.NewPCG(3, 4)), 150)
	ctx := context.Background()
	batched, single := testenv.MySQL(t), testenv.MySQL(t)

	require.NoError(t, mysqlstore.NewEventWriter(batched).WriteBatch(ctx, events))
	require.NoError(t, mysqlstore.NewEventWriter(single).WriteOneByOne(ctx, events))

	assert.Equal(t, readStates(t, batched), readStates(t, single))
	assert.Equal(t, readLog(t, batched), readLog(t, single))
}

func TestWriteBatchReportsRowsWritten(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	got := map[string]int64{}
	w.OnRows = func(table string, rows int64) { got[table] += rows }
	events := randomEvents(rand.New(rand.NewPCG(5, 6)), 50)

	require.NoError(t, w.WriteBatch(context.Background(), events))
	require.NoError(t, w.WriteBatch(context.Background(), events[:10]))

	assert.Equal(t, int64(50), got[mysqlstore.TableActionLog], "replayed events are not new rows")
	assert.Positive(t, got[mysqlstore.TableUserState])
}

func TestWriteBatchRejectsABadValueAsPermanentAndWritesNothing(t *testing.T) {
	t.Parallel()
	good := event.Event{ID: "good", UID: "u", PopupID: 1, Action: event.Impression, At: at(0), NextShowAt: at(10), Impressions: 1}
	tests := []struct {
		name string
		give event.Event
	}{
		{"non-ASCII uid", event.Event{ID: "bad", UID: "ü-user", PopupID: 1, Action: event.Click, At: at(1)}},
		{"non-ASCII event id", event.Event{ID: "é1", UID: "u", PopupID: 1, Action: event.Click, At: at(1)}},
		{"impressions beyond INT UNSIGNED", event.Event{ID: "bad", UID: "u", PopupID: 1, Action: event.Impression, At: at(1), Impressions: 5_000_000_000}},
		{"event id too long", event.Event{ID: strings.Repeat("x", 65), UID: "u", PopupID: 1, Action: event.Click, At: at(1)}},
		{"time beyond DATETIME", event.Event{ID: "bad", UID: "u", PopupID: 1, Action: event.Click, At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := testenv.MySQL(t)

			err := mysqlstore.NewEventWriter(db).WriteBatch(context.Background(), []event.Event{good, tt.give})

			var perm *mysqlstore.PermanentError
			require.ErrorAs(t, err, &perm)
			assert.Empty(t, readLog(t, db), "the transaction is rolled back")
			assert.Empty(t, readStates(t, db))
		})
	}
}

func TestWriteBatchOfATransientFailureIsNotPermanent(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	require.NoError(t, db.Close())

	err := w.WriteBatch(context.Background(), []event.Event{{ID: "e", UID: "u", PopupID: 1, Action: event.Click, At: at(0)}})

	require.Error(t, err)
	var perm *mysqlstore.PermanentError
	assert.NotErrorAs(t, err, &perm)
}

func TestCheckBatchSizeAgainstMaxAllowedPacket(t *testing.T) {
	t.Parallel()
	w := mysqlstore.NewEventWriter(testenv.MySQL(t))
	ctx := context.Background()

	require.NoError(t, w.CheckBatchSize(ctx, 5000), "the largest batch the config allows fits the default packet")
	assert.ErrorContains(t, w.CheckBatchSize(ctx, 10_000_000), "max_allowed_packet")
}

func TestConcurrentOverlappingWritersConverge(t *testing.T) {
	t.Parallel()
	events := randomEvents(rand.New(rand.NewPCG(7, 8)), 2000)
	ctx := context.Background()
	reference := testenv.MySQL(t)
	require.NoError(t, mysqlstore.NewEventWriter(reference).WriteBatch(ctx, events))
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)

	writeConcurrently(t, w, events, 9, 10, 400)
	require.NoError(t, w.WriteBatch(ctx, events))

	assert.Equal(t, readStates(t, reference), readStates(t, db))
	assert.Equal(t, readLog(t, reference), readLog(t, db))
}

func TestWriteBatchRetriesADeadlock(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A heavier transaction holds ('zzz', 1): InnoDB picks the smaller one, the writer's, as
	// the deadlock victim.
	other, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer other.Rollback()
	_, err = other.ExecContext(ctx, "INSERT INTO popup_user_state (uid, popup_id) VALUES ('zzz', 1)")
	require.NoError(t, err)
	var otherConn int64
	require.NoError(t, other.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&otherConn))
	filler := make([]string, 2000)
	for i := range filler {
		filler[i] = fmt.Sprintf("('filler-%d', 'f', 1, 'click', NOW())", i)
	}
	_, err = other.ExecContext(ctx, "INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES "+strings.Join(filler, ","))
	require.NoError(t, err)
	deadlocksBefore := innodbDeadlocks(t, db)
	events := []event.Event{
		{ID: "a", UID: "aaa", PopupID: 1, Action: event.Click, At: at(1), NextShowAt: at(100), Impressions: 1},
		{ID: "z", UID: "zzz", PopupID: 1, Action: event.Click, At: at(2), NextShowAt: at(200), Impressions: 2},
	}
	done := make(chan error, 1)
	go func() { done <- w.WriteBatch(ctx, events) }()
	waitStateUpsertBlockedBy(t, db, otherConn) // the writer now holds ('aaa', 1) and waits for ('zzz', 1)

	_, err = other.ExecContext(ctx, "INSERT INTO popup_user_state (uid, popup_id) VALUES ('aaa', 1)")
	require.NoError(t, err, "the writer, not this transaction, is the deadlock victim")
	require.NoError(t, other.Commit())

	require.NoError(t, <-done, "the deadlocked batch is retried and lands")
	assert.Greater(t, innodbDeadlocks(t, db), deadlocksBefore)
	got := readStates(t, db)
	require.Len(t, got, 2)
	assert.Equal(t, at(100), got[0].NextShowAt)
	assert.Equal(t, at(200), got[1].NextShowAt)
}

// waitStateUpsertBlockedBy waits until a user-state upsert waits for a lock that MySQL
// connection conn holds. The upsert takes its rows in order, so a writer of ('aaa', 1) and
// ('zzz', 1) that waits for the holder of ('zzz', 1) already holds ('aaa', 1). (A fixed sleep
// could lose the race on a busy machine: the other transaction would take ('aaa', 1) first and
// no deadlock would form.)
// Polled every 150 ms: MariaDB refreshes these tables' cache only when it was last read over
// 100 ms before, so a faster poll keeps reading the state of its first read.
func waitStateUpsertBlockedBy(t *testing.T, db *sql.DB, conn int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS w
			JOIN information_schema.INNODB_TRX holder ON holder.trx_id = w.blocking_trx_id
			JOIN information_schema.INNODB_TRX waiter ON waiter.trx_id = w.requesting_trx_id
			WHERE holder.trx_mysql_thread_id = ? AND waiter.trx_query LIKE 'INSERT INTO popup_user_state%'`, conn).Scan(&n)
		return err == nil && n > 0
	}, 20*time.Second, 150*time.Millisecond, "the writer never waited for the other transaction's row")
}

// innodbDeadlocks reads MariaDB's count of detected deadlocks (the test harness runs MariaDB).
func innodbDeadlocks(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var name string
	var n int64
	require.NoError(t, db.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'").Scan(&name, &n))
	return n
}

// writeConcurrently has eight writers each write rounds shuffled batches of size overlapping
// events, drawn from seed; it fails the test on any error (deadlocks between writers are retried
// by WriteBatch, so there should be none).
func writeConcurrently(t *testing.T, w *mysqlstore.EventWriter, events []event.Event, seed uint64, rounds, size int) {
	t.Helper()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(g), seed))
			for range rounds {
				lo := r.IntN(len(events) - size)
				b := append([]event.Event(nil), events[lo:lo+size]...)
				r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
				if err := w.WriteBatch(context.Background(), b); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		require.NoError(t, <-errs, "deadlocks between writers are retried")
	}
}
