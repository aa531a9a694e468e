package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"popupsvc/internal/popup"
)

// UserStateLoader rebuilds a user's state from MySQL after Redis lost it.
type UserStateLoader struct{ db *sql.DB }

// NewUserStateLoader returns a loader over db.
func NewUserStateLoader(db *sql.DB) *UserStateLoader { return &UserStateLoader{db: db} }

// Load returns uid's per-popup state and today's impression count (for the daily cap), as of
// what the worker has written. Two indexed reads: the state table's primary key and the action
// log's (uid, event_at) index.
func (l *UserStateLoader) Load(ctx context.Context, uid string, now time.Time) (popup.UserState, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT popup_id, next_show_at, impressions, last_impression_at,
		last_click_at, last_close_at FROM popup_user_state WHERE uid = ?`, uid)
	if err != nil {
		return popup.UserState{}, fmt.Errorf("load user state: %w", err)
	}
	defer rows.Close()
	st := popup.UserState{}
	for rows.Next() {
		var (
			id               int64
			ps               popup.PopupState
			next, imp, click time.Time
			closed           time.Time
		)
		if err := rows.Scan(&id, &next, &ps.Impressions, &imp, &click, &closed); err != nil {
			return popup.UserState{}, fmt.Errorf("scan user state: %w", err)
		}
		ps.NextShowAt, ps.LastImpressionAt, ps.LastClickAt, ps.LastCloseAt = fromDB(next), fromDB(imp), fromDB(click), fromDB(closed)
		if st.Popups == nil {
			st.Popups = map[int64]popup.PopupState{}
		}
		st.Popups[id] = ps
	}
	if err := rows.Err(); err != nil {
		return popup.UserState{}, err
	}
	day := popup.DayNumber(now)
	dayStart := time.Unix(int64(day)*86400, 0).UTC()
	var n int
	err = l.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log
		WHERE uid = ? AND event_at >= ? AND action = 'impression'`, uid, dayStart).Scan(&n)
	if err != nil {
		return popup.UserState{}, fmt.Errorf("count today's impressions: %w", err)
	}
	if n > 0 {
		st.Day, st.DayCount = day, n
	}
	return st, nil
}

// StateUIDs returns up to limit distinct uids of popup_user_state greater than after, in order:
// one step of a scan of every uid with durable state (the known-users filter's rebuild), on the
// primary key's (uid, popup_id) order.
func (l *UserStateLoader) StateUIDs(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT DISTINCT uid FROM popup_user_state WHERE uid > ? ORDER BY uid LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("scan user-state uids: %w", err)
	}
	defer rows.Close()
	uids := make([]string, 0, limit)
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, fmt.Errorf("scan user-state uids: %w", err)
		}
		uids = append(uids, uid)
	}
	return uids, rows.Err()
}
