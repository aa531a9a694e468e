package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// StatsRepo reads operators' results: the counters the worker keeps in popup_daily_stats (UTC
// days) and popup_slot_stats (UTC quarter hours and buttons), the unique users counted from the
// action log for the days it still keeps, and the reach counted from popup_user_state.
type StatsRepo struct{ db *sql.DB }

// NewStatsRepo returns a stats reader over db.
func NewStatsRepo(db *sql.DB) *StatsRepo { return &StatsRepo{db: db} }

// PopupStats returns one popup's every day of q, its unique users when q asks, and its users
// reached; popup.ErrNotFound when no popup has that id (archived ones count).
// Queries: a primary-key lookup of popup_config; primary-key ranges of popup_daily_stats,
// popup_slot_stats and popup_locale_slot_stats; for uniques, ranges of the action log's
// (popup_id, action, event_at, uid, locale) index; a range count of popup_user_state's
// (popup_id, impressions) index.
func (r *StatsRepo) PopupStats(ctx context.Context, id int64, q report.StatsQuery) (report.Stats, error) {
	var one int
	err := r.db.QueryRowContext(ctx, "SELECT 1 FROM popup_config WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return report.Stats{}, popup.ErrNotFound
	}
	if err != nil {
		return report.Stats{}, fmt.Errorf("read popup %d: %w", id, err)
	}
	all, err := r.counts(ctx, id, q)
	if err != nil {
		return report.Stats{}, err
	}
	s := report.Stats{PopupID: id, Days: newDays(q)}
	if len(all) > 0 {
		s = all[0]
	}
	if q.Uniques {
		if err := r.uniques(ctx, &s, q); err != nil {
			return report.Stats{}, err
		}
	}
	if s.Locales, err = r.localeStats(ctx, id, q, q.Uniques && s.Users != nil); err != nil {
		return report.Stats{}, err
	}
	reached, err := r.usersReached(ctx, []int64{id})
	if err != nil {
		return report.Stats{}, err
	}
	s.UsersReached = reached[id]
	return s, nil
}

// AllStats returns, for every popup with events in q's days, its every day and its users
// reached, by popup id (no unique users: they would read the action log of every popup).
// Queries: ranges of popup_daily_stats' and popup_slot_stats' slot indexes, and one grouped
// range count of popup_user_state's (popup_id, impressions) index for the popups found.
func (r *StatsRepo) AllStats(ctx context.Context, q report.StatsQuery) ([]report.Stats, error) {
	all, err := r.counts(ctx, 0, q)
	if err != nil || len(all) == 0 {
		return all, err
	}
	ids := make([]int64, len(all))
	for i := range all {
		ids[i] = all[i].PopupID
	}
	reached, err := r.usersReached(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range all {
		all[i].UsersReached = reached[all[i].PopupID]
	}
	return all, nil
}

func dateArg(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// newDays is q's every day, zero and complete.
func newDays(q report.StatsQuery) []report.DayCount {
	days := make([]report.DayCount, q.Days())
	for i := range days {
		days[i] = report.DayCount{Day: q.Bounds[i], Complete: true}
	}
	return days
}

// byPopup collects rows per popup (ordered by popup id), each with q's every day.
type byPopup struct {
	q   report.StatsQuery
	out []report.Stats
	idx map[int64]int
}

func (b *byPopup) days(id int64) []report.DayCount {
	if b.idx == nil {
		b.idx = map[int64]int{}
	}
	i, ok := b.idx[id]
	if !ok {
		i = len(b.out)
		b.idx[id] = i
		b.out = append(b.out, report.Stats{PopupID: id, Days: newDays(b.q)})
	}
	return b.out[i].Days
}

func (b *byPopup) result() []report.Stats {
	slices.SortFunc(b.out, func(x, y report.Stats) int { return cmp.Compare(x.PopupID, y.PopupID) })
	return b.out
}

// popupFilter is the WHERE clause start for one popup (id > 0) or every popup.
func popupFilter(id int64, args []any) (string, []any) {
	if id > 0 {
		return "popup_id = ? AND ", append(args, id)
	}
	return "", args
}

// dayOf is the SQL of the 1-based index of the day of q holding a time expression (in whole
// units of unit seconds since 1970): MySQL's INTERVAL() binary-searches the day boundaries.
func dayOf(expr string, unit int64, q report.StatsQuery, args []any) (string, []any) {
	var sb strings.Builder
	sb.WriteString("INTERVAL(")
	sb.WriteString(expr)
	for _, b := range q.Bounds {
		sb.WriteString(",?")
		args = append(args, floorDiv(b.Unix(), unit))
	}
	sb.WriteByte(')')
	return sb.String(), args
}

const (
	slotMinutes = "TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', slot_start)"
	logSeconds  = "TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', event_at)"
)

// counts reads the counts of one popup (id > 0) or of every popup with events over q's days.
// UTC days are popup_daily_stats' rows (complete, kept forever) with the named buttons' clicks
// from popup_slot_stats; another zone's days are sums of popup_slot_stats' quarter hours, marked
// incomplete where a UTC day they overlap has slot counts short of its daily row.
func (r *StatsRepo) counts(ctx context.Context, id int64, q report.StatsQuery) ([]report.Stats, error) {
	b := &byPopup{q: q}
	n := q.Days()
	from, to := q.Bounds[0], q.Bounds[n]
	if q.UTC {
		where, args := popupFilter(id, nil)
		rows, err := r.db.QueryContext(ctx, `SELECT popup_id, day, impressions, clicks, closes FROM popup_daily_stats
			WHERE `+where+`day >= ? AND day < ? ORDER BY popup_id, day`, append(args, dateArg(from), dateArg(to))...)
		if err != nil {
			return nil, fmt.Errorf("read daily stats: %w", err)
		}
		err = scanRows(rows, func(rows *sql.Rows) error {
			var pid int64
			var day time.Time
			var c report.DayCount
			if err := rows.Scan(&pid, &day, &c.Impressions, &c.Clicks, &c.Closes); err != nil {
				return err
			}
			i := int(day.Sub(from) / (24 * time.Hour))
			if i >= 0 && i < n {
				d := &b.days(pid)[i]
				d.Impressions, d.Clicks, d.Closes = c.Impressions, c.Clicks, c.Closes
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read daily stats: %w", err)
		}
	}
	day, args := dayOf(slotMinutes, 60, q, nil)
	where, args := popupFilter(id, args)
	buttons := ""
	if q.UTC {
		buttons = " AND button >= 0" // the rest is in the daily rows
	}
	rows, err := r.db.QueryContext(ctx, `SELECT popup_id, `+day+` AS d, button, SUM(impressions), SUM(clicks), SUM(closes)
		FROM popup_slot_stats WHERE `+where+`slot_start >= ? AND slot_start < ?`+buttons+`
		GROUP BY popup_id, d, button`, append(args, from.UTC(), to.UTC())...)
	if err != nil {
		return nil, fmt.Errorf("read slot stats: %w", err)
	}
	err = scanRows(rows, func(rows *sql.Rows) error {
		var pid int64
		var i, button int
		var imp, clk, cls int64
		if err := rows.Scan(&pid, &i, &button, &imp, &clk, &cls); err != nil {
			return err
		}
		if i--; i < 0 || i >= n {
			return nil
		}
		d := &b.days(pid)[i]
		if !q.UTC {
			d.Impressions += imp
			d.Clicks += clk
			d.Closes += cls
		}
		if button >= 0 && clk > 0 {
			if d.Buttons == nil {
				d.Buttons = map[int]int64{}
			}
			d.Buttons[button] += clk
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read slot stats: %w", err)
	}
	if !q.UTC {
		if err := r.markIncomplete(ctx, id, q, b); err != nil {
			return nil, err
		}
	}
	return b.result(), nil
}

// markIncomplete marks the days of another zone than UTC that overlap a UTC day whose
// popup_slot_stats rows sum to less than its popup_daily_stats row: quarter hours the slot table
// never got (days before the action log was kept when the table was installed). Both tables
// count the same accepted events in one transaction since, so equal sums mean every event of
// that UTC day is in the slots.
func (r *StatsRepo) markIncomplete(ctx context.Context, id int64, q report.StatsQuery, b *byPopup) error {
	n := q.Days()
	first := q.Bounds[0].UTC().Truncate(24 * time.Hour)
	end := q.Bounds[n].UTC()
	if t := end.Truncate(24 * time.Hour); t.Before(end) {
		end = t.Add(24 * time.Hour)
	}
	type key struct {
		popupID int64
		day     string
	}
	daily := map[key][3]int64{}
	where, args := popupFilter(id, nil)
	rows, err := r.db.QueryContext(ctx, `SELECT popup_id, DATE_FORMAT(day, '%Y-%m-%d'), impressions, clicks, closes FROM popup_daily_stats
		WHERE `+where+`day >= ? AND day < ?`, append(args, dateArg(first), dateArg(end))...)
	if err != nil {
		return fmt.Errorf("read daily stats: %w", err)
	}
	err = scanRows(rows, func(rows *sql.Rows) error {
		var k key
		var c [3]int64
		if err := rows.Scan(&k.popupID, &k.day, &c[0], &c[1], &c[2]); err != nil {
			return err
		}
		daily[k] = c
		return nil
	})
	if err != nil {
		return fmt.Errorf("read daily stats: %w", err)
	}
	where, args = popupFilter(id, nil)
	rows, err = r.db.QueryContext(ctx, `SELECT popup_id, DATE_FORMAT(slot_start, '%Y-%m-%d') AS d, SUM(impressions), SUM(clicks), SUM(closes)
		FROM popup_slot_stats WHERE `+where+`slot_start >= ? AND slot_start < ? GROUP BY popup_id, d`, append(args, first, end)...)
	if err != nil {
		return fmt.Errorf("read slot stats: %w", err)
	}
	err = scanRows(rows, func(rows *sql.Rows) error {
		var k key
		var c [3]int64
		if err := rows.Scan(&k.popupID, &k.day, &c[0], &c[1], &c[2]); err != nil {
			return err
		}
		if daily[k] == c {
			delete(daily, k)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read slot stats: %w", err)
	}
	// What is left: UTC days with daily counts the slots do not match.
	for k := range daily {
		dayStart, _ := time.Parse(time.DateOnly, k.day)
		dayEnd := dayStart.Add(24 * time.Hour)
		days := b.days(k.popupID)
		for i := range days {
			if q.Bounds[i].Before(dayEnd) && q.Bounds[i+1].After(dayStart) {
				days[i].Complete = false
			}
		}
	}
	return nil
}

// uniques counts the distinct users shown the popup on each day of q the action log keeps
// whole, and over the range when it keeps all of it.
func (r *StatsRepo) uniques(ctx context.Context, s *report.Stats, q report.StatsQuery) error {
	n := q.Days()
	k := 0
	for k < n && q.Bounds[k].Before(q.LogKeptSince) {
		k++
	}
	if k == n {
		return nil
	}
	from, to := q.Bounds[k], q.Bounds[n]
	for i := k; i < n; i++ {
		zero := int64(0)
		s.Days[i].Users = &zero
	}
	day, args := dayOf(logSeconds, 1, q, nil)
	rows, err := r.db.QueryContext(ctx, `SELECT `+day+` AS d, COUNT(DISTINCT uid) FROM popup_action_log
		WHERE popup_id = ? AND action = 'impression' AND event_at >= ? AND event_at < ? GROUP BY d`,
		append(args, s.PopupID, toDB(from), toDB(to))...)
	if err != nil {
		return fmt.Errorf("count unique users: %w", err)
	}
	err = scanRows(rows, func(rows *sql.Rows) error {
		var i int
		var users int64
		if err := rows.Scan(&i, &users); err != nil {
			return err
		}
		if i--; i >= k && i < n {
			*s.Days[i].Users = users
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("count unique users: %w", err)
	}
	if k > 0 {
		return nil // the range starts before what the log keeps
	}
	var users int64
	if err := r.db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT uid) FROM popup_action_log
		WHERE popup_id = ? AND action = 'impression' AND event_at >= ? AND event_at < ?`,
		s.PopupID, toDB(from), toDB(to)).Scan(&users); err != nil {
		return fmt.Errorf("count unique users: %w", err)
	}
	s.Users = &users
	return nil
}

// scanRows calls scan for every row and closes rows.
func scanRows(rows *sql.Rows, scan func(*sql.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// usersReached counts, per popup, the users whose state shows at least one impression, with
// those whose rows the state purge removed (StatePurger):
// SELECT popup_id, COUNT(*) FROM popup_user_state WHERE popup_id IN (...) AND impressions > 0
// GROUP BY popup_id, a range of the (popup_id, impressions) index per popup, plus
// popup_state_purged's rows by primary key.
func (r *StatsRepo) usersReached(ctx context.Context, ids []int64) (map[int64]int64, error) {
	in := "?" + strings.Repeat(",?", len(ids)-1)
	q := `SELECT popup_id, SUM(n) FROM (
		SELECT popup_id, COUNT(*) AS n FROM popup_user_state WHERE popup_id IN (` + in + `) AND impressions > 0 GROUP BY popup_id
		UNION ALL SELECT popup_id, users_reached FROM popup_state_purged WHERE popup_id IN (` + in + `)) AS reached GROUP BY popup_id`
	args := make([]any, 0, 2*len(ids))
	for range 2 {
		for _, id := range ids {
			args = append(args, id)
		}
	}
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("count users reached: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]int64, len(ids))
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("count users reached: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count users reached: %w", err)
	}
	return out, nil
}
