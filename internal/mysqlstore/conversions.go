package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// Conversions in the worker's batch transaction (docs/CONTRACT.md §14): the conversion log,
// de-duplicated by (uid, event_id), and the attribution of the conversions it newly accepted to
// every experiment phase that exposed their user within the goal's window before them
// (popup_experiment_goal_user per user, popup_experiment_goal per arm). Only the log's new rows
// are attributed (the rows carrying this attempt's batch id, as the action log's), so a batch
// written twice counts once.

// splitConversions separates a batch's conversions from its display events, each in queue order;
// a batch without conversions is returned as it is.
func splitConversions(events []event.Event) (display, convs []event.Event) {
	n := 0
	for i := range events {
		if events[i].Action == event.Conversion {
			n++
		}
	}
	if n == 0 {
		return events, nil
	}
	display = make([]event.Event, 0, len(events)-n)
	convs = make([]event.Event, 0, n)
	for _, e := range events {
		if e.Action == event.Conversion {
			convs = append(convs, e)
		} else {
			display = append(display, e)
		}
	}
	return display, convs
}

// writeConversions logs convs and attributes those the log newly accepted.
func writeConversions(ctx context.Context, tx *sql.Tx, batch uint64, convs []event.Event) error {
	if len(convs) == 0 {
		return nil
	}
	rows := logRows(convs)
	var q strings.Builder
	q.WriteString("INSERT INTO popup_conversion_log (uid, event_id, goal_key, value, event_at, batch_id) VALUES ")
	args := make([]any, 0, len(rows)*6)
	for n, i := range rows {
		if n > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?,?)")
		c := &convs[i]
		args = append(args, c.UID, c.ID, c.Goal, c.Value, toDB(c.At), batch)
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE uid = uid")
	res, err := tx.ExecContext(ctx, q.String(), args...)
	if err != nil {
		return err
	}
	inserted, _ := res.RowsAffected()
	var news []int
	switch {
	case inserted == 0:
		return nil // a batch written again: nothing new
	case inserted == int64(len(rows)):
		news = rows
	default:
		if news, err = newConversions(ctx, tx, batch, convs, rows); err != nil {
			return err
		}
	}
	return attribute(ctx, tx, convs, news)
}

// newConversions returns which of rows this attempt inserted into the log (they carry its
// batch id).
func newConversions(ctx context.Context, tx *sql.Tx, batch uint64, convs []event.Event, rows []int) ([]int, error) {
	args := make([]any, 0, 1+2*len(rows))
	args = append(args, batch)
	for _, i := range rows {
		args = append(args, convs[i].UID, convs[i].ID)
	}
	res, err := tx.QueryContext(ctx, `SELECT uid, event_id FROM popup_conversion_log WHERE batch_id = ? AND (uid, event_id) IN (`+
		tuples(len(rows), 2)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	type key struct{ uid, id string }
	got := map[key]bool{}
	for res.Next() {
		var k key
		if err := res.Scan(&k.uid, &k.id); err != nil {
			return nil, err
		}
		got[k] = true
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	var out []int
	for _, i := range rows {
		if got[key{convs[i].UID, convs[i].ID}] {
			out = append(out, i)
		}
	}
	return out, nil
}

// tuples is "(?,?),(?,?)…": n tuples of cols placeholders.
func tuples(n, cols int) string {
	one := "(" + strings.Repeat(",?", cols)[1:] + ")"
	return strings.Repeat(one+",", n)[:n*(len(one)+1)-1]
}

// goalUserKey is one row of popup_experiment_goal_user.
type goalUserKey struct {
	popupID   int64
	salt, uid string
	goal      string
}

// goalUserAdd is what a batch adds to one user's row: its arm, conversions, value and first time.
type goalUserAdd struct {
	arm         string
	conversions int64
	value       float64
	first       time.Time
}

// exposure is one popup_experiment_user row: a phase that exposed a user.
type exposure struct {
	popupID int64
	salt    string
	arm     string
	first   time.Time
}

// attribute counts the new conversions convs[news] for every phase that exposed their user
// within the goal's window before them. A conversion of a goal that no longer exists is logged and
// counts nowhere.
func attribute(ctx context.Context, tx *sql.Tx, convs []event.Event, news []int) error {
	goals, err := readGoals(ctx, tx, convs, news)
	if err != nil {
		return err
	}
	exposed, err := readExposures(ctx, tx, convs, news)
	if err != nil {
		return err
	}
	adds := map[goalUserKey]*goalUserAdd{}
	for _, i := range news {
		c := &convs[i]
		g, ok := goals[c.Goal]
		if !ok {
			continue
		}
		value := c.Value
		if g.Value != popup.GoalValueSum {
			value = 0
		}
		for _, x := range exposed[c.UID] {
			if !g.Counts(x.first, toDB(c.At)) {
				continue
			}
			k := goalUserKey{popupID: x.popupID, salt: x.salt, uid: c.UID, goal: c.Goal}
			a := adds[k]
			if a == nil {
				a = &goalUserAdd{arm: x.arm, first: toDB(c.At)}
				adds[k] = a
			}
			a.conversions++
			a.value += value
			if c.At.Before(a.first) {
				a.first = toDB(c.At)
			}
		}
	}
	if len(adds) == 0 {
		return nil
	}
	keys := make([]goalUserKey, 0, len(adds))
	for k := range adds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b goalUserKey) int {
		return cmp.Or(cmp.Compare(a.popupID, b.popupID), cmp.Compare(a.salt, b.salt), cmp.Compare(a.uid, b.uid), cmp.Compare(a.goal, b.goal))
	})
	// A user exposed in many phases makes as many rows: the statements go in chunks, so that
	// none outgrows the batch's statement size (CheckBatchSize).
	before := map[goalUserKey]float64{}
	for chunk := range slices.Chunk(keys, goalRowsPerStatement) {
		if err := lockGoalUsers(ctx, tx, chunk, before); err != nil {
			return err
		}
		if err := upsertGoalUsers(ctx, tx, chunk, adds); err != nil {
			return err
		}
	}
	return addGoalArms(ctx, tx, keys, adds, before)
}

// goalRowsPerStatement bounds the rows of one attribution statement.
const goalRowsPerStatement = 1000

// readGoals reads the goals the new conversions name, by key.
func readGoals(ctx context.Context, tx *sql.Tx, convs []event.Event, news []int) (map[string]popup.Goal, error) {
	var keys []any
	seen := map[string]bool{}
	for _, i := range news {
		if g := convs[i].Goal; !seen[g] {
			seen[g] = true
			keys = append(keys, g)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+goalColumns+` FROM popup_goal WHERE goal_key IN (`+strings.Repeat(",?", len(keys))[1:]+`)`, keys...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]popup.Goal{}
	for rows.Next() {
		g, err := scanGoal(rows)
		if err != nil {
			return nil, err
		}
		out[g.Key] = g
	}
	return out, rows.Err()
}

// readExposures reads every experiment phase that exposed the new conversions' users, by uid.
func readExposures(ctx context.Context, tx *sql.Tx, convs []event.Event, news []int) (map[string][]exposure, error) {
	var uids []any
	seen := map[string]bool{}
	for _, i := range news {
		if u := convs[i].UID; !seen[u] {
			seen[u] = true
			uids = append(uids, u)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT uid, popup_id, salt, arm, first_exposed_at FROM popup_experiment_user WHERE uid IN (`+
		strings.Repeat(",?", len(uids))[1:]+`)`, uids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]exposure{}
	for rows.Next() {
		var (
			uid string
			x   exposure
		)
		if err := rows.Scan(&uid, &x.popupID, &x.salt, &x.arm, &x.first); err != nil {
			return nil, err
		}
		x.first = x.first.UTC()
		out[uid] = append(out[uid], x)
	}
	return out, rows.Err()
}

// lockGoalUsers reads and locks the users' rows the batch adds to; a row not there is a user
// the batch converts for the first time in that phase.
func lockGoalUsers(ctx context.Context, tx *sql.Tx, keys []goalUserKey, into map[goalUserKey]float64) error {
	args := make([]any, 0, 4*len(keys))
	for _, k := range keys {
		args = append(args, k.popupID, k.salt, k.uid, k.goal)
	}
	rows, err := tx.QueryContext(ctx, `SELECT popup_id, salt, uid, goal_key, value_sum FROM popup_experiment_goal_user
		WHERE (popup_id, salt, uid, goal_key) IN (`+tuples(len(keys), 4)+`) FOR UPDATE`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k goalUserKey
			v float64
		)
		if err := rows.Scan(&k.popupID, &k.salt, &k.uid, &k.goal, &v); err != nil {
			return err
		}
		into[k] = v
	}
	return rows.Err()
}

func upsertGoalUsers(ctx context.Context, tx *sql.Tx, keys []goalUserKey, adds map[goalUserKey]*goalUserAdd) error {
	args := make([]any, 0, 8*len(keys))
	for _, k := range keys {
		a := adds[k]
		args = append(args, k.popupID, k.salt, k.uid, k.goal, a.arm, a.conversions, a.value, a.first)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO popup_experiment_goal_user (popup_id, salt, uid, goal_key, arm, conversions, value_sum, first_at)
		VALUES `+tuples(len(keys), 8)+` ON DUPLICATE KEY UPDATE conversions = conversions + VALUES(conversions),
		value_sum = value_sum + VALUES(value_sum), first_at = LEAST(first_at, VALUES(first_at))`, args...)
	return err
}

// armGoalKey is one row of popup_experiment_goal.
type armGoalKey struct {
	popupID   int64
	salt, arm string
	goal      string
}

// addGoalArms adds to each arm's sums: a user the batch converts for the first time, the
// conversions, the value, and the change of the square of the user's value (the variance of the
// value per user).
func addGoalArms(ctx context.Context, tx *sql.Tx, keys []goalUserKey, adds map[goalUserKey]*goalUserAdd, before map[goalUserKey]float64) error {
	type sums struct {
		users, conversions int64
		value, square      float64
	}
	arms := map[armGoalKey]*sums{}
	var order []armGoalKey
	for _, k := range keys {
		a := adds[k]
		ak := armGoalKey{popupID: k.popupID, salt: k.salt, arm: a.arm, goal: k.goal}
		s := arms[ak]
		if s == nil {
			s = &sums{}
			arms[ak] = s
			order = append(order, ak)
		}
		old, had := before[k]
		if !had {
			s.users++
		}
		s.conversions += a.conversions
		s.value += a.value
		s.square += (old+a.value)*(old+a.value) - old*old
	}
	slices.SortFunc(order, func(a, b armGoalKey) int {
		return cmp.Or(cmp.Compare(a.popupID, b.popupID), cmp.Compare(a.salt, b.salt), cmp.Compare(a.arm, b.arm), cmp.Compare(a.goal, b.goal))
	})
	for chunk := range slices.Chunk(order, goalRowsPerStatement) {
		args := make([]any, 0, 8*len(chunk))
		for _, k := range chunk {
			s := arms[k]
			args = append(args, k.popupID, k.salt, k.arm, k.goal, s.users, s.conversions, s.value, s.square)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO popup_experiment_goal (popup_id, salt, arm, goal_key, converted_users, conversions, value_sum, value_sq_sum)
			VALUES `+tuples(len(chunk), 8)+` ON DUPLICATE KEY UPDATE converted_users = converted_users + VALUES(converted_users),
			conversions = conversions + VALUES(conversions), value_sum = value_sum + VALUES(value_sum),
			value_sq_sum = value_sq_sum + VALUES(value_sq_sum)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// GoalCounts reads an experiment phase's counts per arm and goal, by arm and goal, and for a goal
// with a value cap the sum over the arm's users of their values capped (docs/CONTRACT.md §14):
// the per-arm sums cannot be capped after the fact, so that one is summed from the users' rows
// (popup_experiment_goal_user) of the capped goals alone, in the same grouped statement. A user
// an erasure removed is no longer in them: the capped sum leaves them out, the raw sum keeps them.
func (r *StatsRepo) GoalCounts(ctx context.Context, popupID int64, salt string) ([]report.GoalCount, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT e.arm, e.goal_key, e.converted_users, e.conversions, e.value_sum, e.value_sq_sum,
			CASE WHEN pg.value_cap IS NOT NULL THEN COALESCE(c.capped, 0) END
		FROM popup_experiment_goal e
		LEFT JOIN popup_goal pg ON pg.goal_key = e.goal_key
		LEFT JOIN (SELECT u.arm, u.goal_key, SUM(LEAST(u.value_sum, g.value_cap)) AS capped
			FROM popup_experiment_goal_user u JOIN popup_goal g ON g.goal_key = u.goal_key AND g.value_cap IS NOT NULL
			WHERE u.popup_id = ? AND u.salt = ? GROUP BY u.arm, u.goal_key) c ON c.arm = e.arm AND c.goal_key = e.goal_key
		WHERE e.popup_id = ? AND e.salt = ? ORDER BY e.arm, e.goal_key`, popupID, salt, popupID, salt)
	if err != nil {
		return nil, err
	}
	return scanGoalCounts(rows)
}

// GoalCountsExposedIn reads what GoalCounts reads for the phase's users first exposed in
// [from, to) alone (a cohort: docs/CONTRACT.md §15), summed from the users' rows; a user an
// erasure removed is no longer in them.
func (r *StatsRepo) GoalCountsExposedIn(ctx context.Context, popupID int64, salt string, from, to time.Time) ([]report.GoalCount, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT g.arm, g.goal_key, COUNT(*), SUM(g.conversions), SUM(g.value_sum), SUM(g.value_sum * g.value_sum),
			CASE WHEN MAX(pg.value_cap) IS NOT NULL THEN SUM(LEAST(g.value_sum, pg.value_cap)) END
		FROM popup_experiment_goal_user g JOIN popup_experiment_user u ON u.popup_id = g.popup_id AND u.salt = g.salt AND u.uid = g.uid
		LEFT JOIN popup_goal pg ON pg.goal_key = g.goal_key
		WHERE g.popup_id = ? AND g.salt = ? AND u.first_exposed_at >= ? AND u.first_exposed_at < ?
		GROUP BY g.arm, g.goal_key ORDER BY g.arm, g.goal_key`, popupID, salt, toDB(from), toDB(to))
	if err != nil {
		return nil, fmt.Errorf("read goal counts of a cohort: %w", err)
	}
	return scanGoalCounts(rows)
}

// scanGoalCounts reads rows of (arm, goal, converted users, conversions, value sum, square sum,
// capped value sum or NULL).
func scanGoalCounts(rows *sql.Rows) ([]report.GoalCount, error) {
	defer rows.Close()
	var out []report.GoalCount
	for rows.Next() {
		var (
			g      report.GoalCount
			capped sql.NullFloat64
		)
		if err := rows.Scan(&g.Arm, &g.Goal, &g.ConvertedUsers, &g.Conversions, &g.ValueSum, &g.ValueSqSum, &capped); err != nil {
			return nil, err
		}
		if capped.Valid {
			g.ValueSumCapped = &capped.Float64
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
