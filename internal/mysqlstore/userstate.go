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

// Load returns uid's per-popup state, today's impression count (for the daily cap) and the last
// impression time (for the min gap), as of
// what the worker has written: one statement on the state table's primary key (the count is the
// largest day_impressions of the rows whose impression_day is today; migration 00005). It passes
// a gated pool's gate (Ungated): the hot path's load has its own budget and its own answer when
// MySQL cannot give the state.
func (l *UserStateLoader) Load(ctx context.Context, uid string, now time.Time) (popup.UserState, error) {
	rows, err := l.db.QueryContext(Ungated(ctx), `SELECT popup_id, next_show_at, impressions, last_impression_at,
		last_click_at, last_close_at, impression_day, day_impressions FROM popup_user_state WHERE uid = ?`, uid)
	if err != nil {
		return popup.UserState{}, fmt.Errorf("load user state: %w", err)
	}
	defer rows.Close()
	st := popup.UserState{}
	today := popup.DayNumber(now)
	for rows.Next() {
		var (
			id               int64
			ps               popup.PopupState
			next, imp, click time.Time
			closed           time.Time
			day              int32
			dayCount         int
		)
		if err := rows.Scan(&id, &next, &ps.Impressions, &imp, &click, &closed, &day, &dayCount); err != nil {
			return popup.UserState{}, fmt.Errorf("scan user state: %w", err)
		}
		ps.NextShowAt, ps.LastImpressionAt, ps.LastClickAt, ps.LastCloseAt = fromDB(next), fromDB(imp), fromDB(click), fromDB(closed)
		st.Popups.Set(id, ps)
		// The durable rows do not tell an impression's time from a control exposure's: the
		// latest of either stands for the last shown time, which can only lengthen a min gap.
		if ps.LastImpressionAt.After(st.LastShownAt) {
			st.LastShownAt = ps.LastImpressionAt
		}
		if day == today && dayCount > st.DayCount {
			st.Day, st.DayCount = today, dayCount
		}
	}
	if err := rows.Err(); err != nil {
		return popup.UserState{}, err
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
