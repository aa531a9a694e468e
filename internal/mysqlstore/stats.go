package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"popupsvc/internal/popup"
)

// StatsRepo reads operators' results: the daily counters the worker keeps in popup_daily_stats
// and the reach counted from popup_user_state. It never reads the action log, which the worker
// purges after its retention and which grows with every homepage open.
type StatsRepo struct{ db *sql.DB }

// NewStatsRepo returns a stats reader over db.
func NewStatsRepo(db *sql.DB) *StatsRepo { return &StatsRepo{db: db} }

// PopupStats returns one popup's days with events between from and to (UTC days, both included)
// and its users reached; popup.ErrNotFound when no popup has that id (archived ones count).
// Queries: a primary-key lookup of popup_config, a primary-key range of popup_daily_stats
// (popup_id = ? AND day BETWEEN ? AND ?) and a range count of popup_user_state's
// (popup_id, impressions) index.
func (r *StatsRepo) PopupStats(ctx context.Context, id int64, from, to time.Time) (popup.Stats, error) {
	var one int
	err := r.db.QueryRowContext(ctx, "SELECT 1 FROM popup_config WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Stats{}, popup.ErrNotFound
	}
	if err != nil {
		return popup.Stats{}, fmt.Errorf("read popup %d: %w", id, err)
	}
	all, err := r.days(ctx, `SELECT popup_id, day, impressions, clicks, closes FROM popup_daily_stats
		WHERE popup_id = ? AND day BETWEEN ? AND ? ORDER BY day`, id, dateArg(from), dateArg(to))
	if err != nil {
		return popup.Stats{}, err
	}
	s := popup.Stats{PopupID: id}
	if len(all) > 0 {
		s = all[0]
	}
	reached, err := r.usersReached(ctx, []int64{id})
	if err != nil {
		return popup.Stats{}, err
	}
	s.UsersReached = reached[id]
	return s, nil
}

// AllStats returns, for every popup with events between from and to, its days with events and
// its users reached, by popup id. Queries: a range of popup_daily_stats' day index
// (day BETWEEN ? AND ?) and one grouped range count of popup_user_state's (popup_id,
// impressions) index for the popups found.
func (r *StatsRepo) AllStats(ctx context.Context, from, to time.Time) ([]popup.Stats, error) {
	all, err := r.days(ctx, `SELECT popup_id, day, impressions, clicks, closes FROM popup_daily_stats
		WHERE day BETWEEN ? AND ? ORDER BY popup_id, day`, dateArg(from), dateArg(to))
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

// days runs a popup_daily_stats query ordered by popup_id then day and groups its rows by popup.
func (r *StatsRepo) days(ctx context.Context, q string, args ...any) ([]popup.Stats, error) {
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read daily stats: %w", err)
	}
	defer rows.Close()
	var out []popup.Stats
	for rows.Next() {
		var id int64
		var d popup.DayCount
		if err := rows.Scan(&id, &d.Day, &d.Impressions, &d.Clicks, &d.Closes); err != nil {
			return nil, fmt.Errorf("read daily stats: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].PopupID != id {
			out = append(out, popup.Stats{PopupID: id})
		}
		last := &out[len(out)-1]
		last.Days = append(last.Days, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read daily stats: %w", err)
	}
	return out, nil
}

// usersReached counts, per popup, the users whose state shows at least one impression:
// SELECT popup_id, COUNT(*) FROM popup_user_state WHERE popup_id IN (...) AND impressions > 0
// GROUP BY popup_id, a range of the (popup_id, impressions) index per popup.
func (r *StatsRepo) usersReached(ctx context.Context, ids []int64) (map[int64]int64, error) {
	var q strings.Builder
	q.WriteString("SELECT popup_id, COUNT(*) FROM popup_user_state WHERE popup_id IN (")
	args := make([]any, len(ids))
	for i, id := range ids {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('?')
		args[i] = id
	}
	q.WriteString(") AND impressions > 0 GROUP BY popup_id")
	rows, err := r.db.QueryContext(ctx, q.String(), args...)
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
