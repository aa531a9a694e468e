package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"popupsvc/internal/event"
	"popupsvc/internal/report"
)

// The experiment rollup (docs/CONTRACT.md §10 "Results"): per phase (popup, salt) and user, the
// arm of the user's first exposure and the user's counts (popup_experiment_user), and per arm and
// UTC quarter hour the users first exposed or first clicking in it and its events
// (popup_experiment_slot, migration 00019: any time zone's days are sums of quarter hours). Like
// the daily stats it counts only the events the action log newly accepted, in the same
// transaction, so a batch written twice, an event repeated in a batch or two workers writing the
// same events count once.
//
// Three statements on popup_experiment_user and one on popup_experiment_slot, whatever the
// batch's size, and none for a batch without experiment events:
//
//  1. an upsert of the batch's exposing events (impressions and control exposures), one row per
//     user: a new row takes the arm of the user's earliest exposing event and this attempt's batch
//     id, a known one only adds its exposures. Every exposed user's row now exists and is locked.
//  2. a locking read of every user the batch names (exposed, clicking or closing), by primary key:
//     the row's arm, whether this attempt inserted it (its batch id), and whether it has a first
//     click. The exposed users' rows are already ours; a clicking user's row is locked here, so no
//     other writer can set its first click between this read and the next statement.
//  3. an upsert of the clicks and closes of the users who have a row (only updates: every such row
//     exists and is locked), setting first_click_at where it was NULL.
//
// Every event counts for the arm its user's row holds (the arm of the first exposure), so that a
// user's clicks are in the arm that counted the user as exposed. A click or close of a user with
// no row (never exposed in the phase) counts nothing; within one batch the exposures are written
// first. Rows go in primary-key order, so concurrent writers lock them in the same order.

// expUserKey is one user of one experiment phase.
type expUserKey struct {
	popupID int64
	salt    string
	uid     string
}

func compareExpUserKey(a, b expUserKey) int {
	return cmp.Or(cmp.Compare(a.popupID, b.popupID), strings.Compare(a.salt, b.salt), strings.Compare(a.uid, b.uid))
}

// expUserAdd is what the batch adds to one user row.
type expUserAdd struct {
	expUserKey
	arm        string    // the arm of the earliest exposing event (for a new row)
	exposedAt  time.Time // the earliest exposing event's stored time; zero: no exposure in the batch
	exposures  int64
	clicks     int64
	closes     int64
	firstClick time.Time // the earliest click's stored time; zero: no click in the batch
}

// expEvent is one newly accepted event for one arm reference.
type expEvent struct {
	user   int // index in the batch's []expUserAdd
	action event.Action
	at     time.Time // the stored event time
}

// expUserRow is what the locking read says of a user row.
type expUserRow struct {
	arm        string
	inserted   bool // this attempt's upsert made it
	clickFirst bool // first_click_at was NULL
}

// expSlotKey is one popup_experiment_slot row.
type expSlotKey struct {
	popupID int64
	salt    string
	arm     string
	slot    int64 // unix quarter hour
}

type expSlotAdd struct {
	expSlotKey
	exposedUsers, exposures, clickedUsers, clicks, closes int64
}

// collectExperimentEvents gathers the arm references of the newly accepted events: per user of a
// phase, what the batch adds, and per reference the event (in the users' key order).
func collectExperimentEvents(events []event.Event, news []newRow) ([]expUserAdd, []expEvent) {
	var users []expUserAdd
	var evs []expEvent
	var idx map[expUserKey]int
	for _, r := range news {
		e := &events[r.i]
		if len(e.Arms) == 0 {
			continue
		}
		for _, a := range e.Arms {
			if idx == nil {
				idx = make(map[expUserKey]int, 8)
			}
			k := expUserKey{a.PopupID, a.Salt, e.UID}
			u, ok := idx[k]
			if !ok {
				u = len(users)
				idx[k] = u
				users = append(users, expUserAdd{expUserKey: k})
			}
			add := &users[u]
			switch e.Action {
			case event.Impression, event.Exposure, event.Holdout:
				add.exposures++
				if add.exposedAt.IsZero() || r.at.Before(add.exposedAt) {
					add.exposedAt, add.arm = r.at, a.Arm
				}
			case event.Click:
				add.clicks++
				if add.firstClick.IsZero() || r.at.Before(add.firstClick) {
					add.firstClick = r.at
				}
			case event.Close:
				add.closes++
			}
			evs = append(evs, expEvent{user: u, action: e.Action, at: r.at})
		}
	}
	if len(users) == 0 {
		return nil, nil
	}
	// Key order, and the events' user indexes follow the users.
	order := make([]int, len(users))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return compareExpUserKey(users[a].expUserKey, users[b].expUserKey) })
	sorted := make([]expUserAdd, len(users))
	moved := make([]int, len(users))
	for to, from := range order {
		sorted[to] = users[from]
		moved[from] = to
	}
	for i := range evs {
		evs[i].user = moved[evs[i].user]
	}
	return sorted, evs
}

// addExperimentCounts writes the experiment rollup of the newly accepted events (see above).
func addExperimentCounts(ctx context.Context, tx *sql.Tx, batch uint64, events []event.Event, news []newRow) error {
	users, evs := collectExperimentEvents(events, news)
	if len(users) == 0 {
		return nil
	}
	if err := upsertExposures(ctx, tx, batch, users); err != nil {
		return err
	}
	rows, err := lockExperimentUsers(ctx, tx, batch, users)
	if err != nil {
		return err
	}
	if err := addClicksAndCloses(ctx, tx, users, rows); err != nil {
		return err
	}
	return addExperimentSlots(ctx, tx, experimentSlots(users, evs, rows))
}

// upsertExposures is statement 1: the batch's exposed users, a new row with the arm of the
// earliest exposure and this attempt's batch id (which a known row keeps: the update never sets it).
func upsertExposures(ctx context.Context, tx *sql.Tx, batch uint64, users []expUserAdd) error {
	var q strings.Builder
	q.Grow(256 + len(users)*24)
	q.WriteString("INSERT INTO popup_experiment_user (popup_id, salt, uid, arm, first_exposed_at, exposures, batch_id) VALUES ")
	tail := strconv.AppendUint([]byte(",?,"), batch, 10)
	tail = append(tail, ')')
	args := make([]any, 0, len(users)*6)
	n := 0
	for i := range users {
		u := &users[i]
		if u.exposures == 0 {
			continue
		}
		if n > 0 {
			q.WriteByte(',')
		}
		n++
		q.WriteString("(?,?,?,?,?")
		q.Write(tail)
		args = append(args, u.popupID, u.salt, u.uid, u.arm, u.exposedAt, u.exposures)
	}
	if n == 0 {
		return nil
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE exposures = exposures + VALUES(exposures)")
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// lockExperimentUsers is statement 2: every named user's row, locked, by primary key.
func lockExperimentUsers(ctx context.Context, tx *sql.Tx, batch uint64, users []expUserAdd) (map[expUserKey]expUserRow, error) {
	var q strings.Builder
	q.Grow(160 + len(users)*8)
	q.WriteString("SELECT popup_id, salt, uid, arm, batch_id = ")
	q.Write(strconv.AppendUint(nil, batch, 10))
	// FORCE INDEX: on a small table the optimizer prefers a scan to a range of many keys, and a
	// locking scan would lock every row, serialising the workers.
	q.WriteString(", first_click_at IS NULL FROM popup_experiment_user FORCE INDEX (PRIMARY) WHERE (popup_id, salt, uid) IN (")
	args := make([]any, 0, len(users)*3)
	for i := range users {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?)")
		args = append(args, users[i].popupID, users[i].salt, users[i].uid)
	}
	q.WriteString(") FOR UPDATE")
	res, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	rows := make(map[expUserKey]expUserRow, len(users))
	for res.Next() {
		var k expUserKey
		var r expUserRow
		if err := res.Scan(&k.popupID, &k.salt, &k.uid, &r.arm, &r.inserted, &r.clickFirst); err != nil {
			return nil, err
		}
		rows[k] = r
	}
	return rows, res.Err()
}

// addClicksAndCloses is statement 3: the clicks and closes of users who have a row. Every such
// row exists and is locked, so the upsert only updates (its inserted values are never used).
func addClicksAndCloses(ctx context.Context, tx *sql.Tx, users []expUserAdd, rows map[expUserKey]expUserRow) error {
	var q strings.Builder
	q.Grow(320 + len(users)*24)
	q.WriteString("INSERT INTO popup_experiment_user (popup_id, salt, uid, arm, first_exposed_at, clicks, closes, first_click_at) VALUES ")
	args := make([]any, 0, len(users)*8)
	n := 0
	for i := range users {
		u := &users[i]
		row, ok := rows[u.expUserKey]
		if !ok || u.clicks+u.closes == 0 {
			continue
		}
		if n > 0 {
			q.WriteByte(',')
		}
		n++
		q.WriteString("(?,?,?,?,?,?,?,?)")
		var firstClick any // NULL: no click in the batch
		if u.clicks > 0 {
			firstClick = u.firstClick
		}
		args = append(args, u.popupID, u.salt, u.uid, row.arm, neverTime, u.clicks, u.closes, firstClick)
	}
	if n == 0 {
		return nil
	}
	q.WriteString(` ON DUPLICATE KEY UPDATE
		clicks = clicks + VALUES(clicks),
		closes = closes + VALUES(closes),
		first_click_at = COALESCE(first_click_at, VALUES(first_click_at))`)
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// neverTime is the contract's "never" (docs/CONTRACT.md §5).
var neverTime = time.Unix(0, 0).UTC()

// experimentSlots counts the batch per arm and UTC quarter hour, in primary-key order: each event
// for the arm of its user's row, each newly exposed user in the quarter hour of its first
// exposure, each user's first click in its quarter hour.
func experimentSlots(users []expUserAdd, evs []expEvent, rows map[expUserKey]expUserRow) []expSlotAdd {
	idx := make(map[expSlotKey]int, 8)
	var out []expSlotAdd
	slotSec := int64(SlotLength / time.Second)
	at := func(u *expUserAdd, arm string, t time.Time) *expSlotAdd {
		k := expSlotKey{u.popupID, u.salt, arm, floorDiv(t.Unix(), slotSec)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, expSlotAdd{expSlotKey: k})
		}
		return &out[i]
	}
	for _, ev := range evs {
		u := &users[ev.user]
		row, ok := rows[u.expUserKey]
		if !ok {
			continue // a click or close of a user never exposed in the phase
		}
		d := at(u, row.arm, ev.at)
		switch ev.action {
		case event.Impression, event.Exposure, event.Holdout:
			d.exposures++
		case event.Click:
			d.clicks++
		case event.Close:
			d.closes++
		}
	}
	for i := range users {
		u := &users[i]
		row, ok := rows[u.expUserKey]
		if !ok {
			continue
		}
		if row.inserted {
			at(u, row.arm, u.exposedAt).exposedUsers++
		}
		if row.clickFirst && u.clicks > 0 {
			at(u, row.arm, u.firstClick).clickedUsers++
		}
	}
	slices.SortFunc(out, func(a, b expSlotAdd) int {
		return cmp.Or(cmp.Compare(a.popupID, b.popupID), strings.Compare(a.salt, b.salt), strings.Compare(a.arm, b.arm),
			cmp.Compare(a.slot, b.slot))
	})
	return out
}

// addExperimentSlots adds the counts to popup_experiment_slot.
func addExperimentSlots(ctx context.Context, tx *sql.Tx, counts []expSlotAdd) error {
	args := make([]any, 0, len(counts)*9)
	slotSec := int64(SlotLength / time.Second)
	for _, c := range counts {
		args = append(args, c.popupID, c.salt, c.arm, time.Unix(c.slot*slotSec, 0).UTC(), c.exposedUsers, c.exposures, c.clickedUsers, c.clicks, c.closes)
	}
	return addCounts(ctx, tx, "popup_experiment_slot", []string{"popup_id", "salt", "arm", "slot_start"}, experimentCounts, args)
}

// experimentCounts are the count columns of popup_experiment_slot (and of popup_experiment_daily,
// the UTC days written before it).
var experimentCounts = []string{"exposed_users", "exposures", "clicked_users", "clicks", "closes"}

// ExperimentDays returns one experiment phase's counts per arm and day of loc: the quarter hours
// of popup_experiment_slot summed into loc's days (Zone loc's name), and the UTC days
// popup_experiment_daily kept from before migration 00019 (Zone "UTC": summed with the quarter
// hours' days when loc is UTC, apart otherwise). Queries: three ranges of the tables' primary keys
// by (popup_id, salt) prefix, one of them for the first and last quarter hours, which bound the
// days.
func (r *StatsRepo) ExperimentDays(ctx context.Context, popupID int64, salt string, loc *time.Location) ([]report.ExperimentDay, error) {
	type key struct{ day, arm, zone string }
	idx := map[key]int{}
	var out []report.ExperimentDay
	add := func(d report.ExperimentDay) {
		k := key{d.Day, d.Arm, d.Zone}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, d)
			return
		}
		o := &out[i]
		o.ExposedUsers += d.ExposedUsers
		o.Exposures += d.Exposures
		o.ClickedUsers += d.ClickedUsers
		o.Clicks += d.Clicks
		o.Closes += d.Closes
	}
	fail := func(err error) ([]report.ExperimentDay, error) {
		return nil, fmt.Errorf("read experiment results of popup %d: %w", popupID, err)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT DATE_FORMAT(day, '%Y-%m-%d'), arm, exposed_users, exposures, clicked_users, clicks, closes
		FROM popup_experiment_daily WHERE popup_id = ? AND salt = ?`, popupID, salt)
	if err != nil {
		return fail(err)
	}
	err = scanRows(rows, func(rows *sql.Rows) error {
		d := report.ExperimentDay{Zone: "UTC"}
		if err := rows.Scan(&d.Day, &d.Arm, &d.ExposedUsers, &d.Exposures, &d.ClickedUsers, &d.Clicks, &d.Closes); err != nil {
			return err
		}
		add(d)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	var first, last sql.NullTime
	if err := r.db.QueryRowContext(ctx, `SELECT MIN(slot_start), MAX(slot_start) FROM popup_experiment_slot WHERE popup_id = ? AND salt = ?`,
		popupID, salt).Scan(&first, &last); err != nil {
		return fail(err)
	}
	if !first.Valid {
		return out, nil
	}
	q := report.StatsQuery{Bounds: report.DayBounds(localDate(first.Time, loc), localDate(last.Time, loc), loc)}
	day, args := dayOf(slotMinutes, 60, q, nil)
	rows, err = r.db.QueryContext(ctx, `SELECT `+day+` AS d, arm, SUM(exposed_users), SUM(exposures), SUM(clicked_users), SUM(clicks), SUM(closes)
		FROM popup_experiment_slot WHERE popup_id = ? AND salt = ? GROUP BY d, arm`, append(args, popupID, salt)...)
	if err != nil {
		return fail(err)
	}
	zone := loc.String()
	err = scanRows(rows, func(rows *sql.Rows) error {
		var i int
		d := report.ExperimentDay{Zone: zone}
		if err := rows.Scan(&i, &d.Arm, &d.ExposedUsers, &d.Exposures, &d.ClickedUsers, &d.Clicks, &d.Closes); err != nil {
			return err
		}
		if i--; i < 0 || i >= q.Days() {
			return fmt.Errorf("quarter hour outside the days %s..%s", q.Bounds[0], q.Bounds[q.Days()])
		}
		d.Day = q.Bounds[i].Format(time.DateOnly)
		add(d)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// localDate is t's calendar date in loc, as midnight UTC (report.DayBounds' dates).
func localDate(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ExperimentUserArms calls each with every user popup_experiment_user holds for one experiment
// phase and the arm that counted them (a range of its primary key, read as it streams), for the
// review of a change that keeps the phase's assignment.
func (r *StatsRepo) ExperimentUserArms(ctx context.Context, popupID int64, salt string, each func(uid, arm string)) error {
	rows, err := r.db.QueryContext(ctx, `SELECT uid, arm FROM popup_experiment_user WHERE popup_id = ? AND salt = ?`, popupID, salt)
	if err != nil {
		return fmt.Errorf("read experiment users of popup %d: %w", popupID, err)
	}
	defer rows.Close()
	var uid, arm string
	for rows.Next() {
		if err := rows.Scan(&uid, &arm); err != nil {
			return fmt.Errorf("read experiment users of popup %d: %w", popupID, err)
		}
		each(uid, arm)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read experiment users of popup %d: %w", popupID, err)
	}
	return nil
}
