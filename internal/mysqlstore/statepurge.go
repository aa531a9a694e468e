package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// StatePurger removes the popup_user_state rows that no decision can use any more, in paced
// batches: the rows of a popup archived (and not written since) or ended more than the retention
// ago, whose next-show time has passed, when the popup has no lifetime rule.
//
// Such a row answers exactly what no row answers: the popup is not live (and if an operator
// brings it back, a passed next-show time hides nothing), and the daily cap reads only today's
// count. The rows that must stay for good are those of lifetime rules: a popup with
// max_impressions, or a click or close cooldown of -1 ("for good"), keeps every row, because an
// operator may bring it back (un-archive, roll back, move end_at) and a user who reached the cap
// or closed it for good must never see it again; a row whose next-show time is still ahead (a
// cooldown longer than the retention) stays until it passes.
//
// users_reached must not shrink: each batch adds the users reached among the rows it removes to
// popup_state_purged in its own transaction.
type StatePurger struct {
	db *sql.DB
	// Batch is the most rows one transaction removes (it holds their locks).
	Batch int
	// MinPause is the least time between two batches; after one that took longer, the purger
	// pauses as long as it took, so it uses at most half of one connection's time.
	MinPause time.Duration
}

// NewStatePurger returns a purger of 1,000-row batches at most every 20 ms.
func NewStatePurger(db *sql.DB) *StatePurger {
	return &StatePurger{db: db, Batch: 1000, MinPause: 20 * time.Millisecond}
}

// Purge removes the rows above for the popups archived or ended before cutoff, as of now, and
// returns how many it removed, calling onRows after each batch (metrics). It stops early, with
// ctx's error, when ctx ends.
func (p *StatePurger) Purge(ctx context.Context, now, cutoff time.Time, onRows func(int64)) (removed int64, err error) {
	popups, err := p.popupsDone(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	for _, id := range popups {
		var after stateCursor
		for {
			start := time.Now()
			n, next, more, err := p.purgeBatch(ctx, id, now, after)
			if err != nil {
				return removed, fmt.Errorf("purge user state of popup %d: %w", id, err)
			}
			removed += n
			if onRows != nil && n > 0 {
				onRows(n)
			}
			if !more {
				break
			}
			after = next
			t := time.NewTimer(max(p.MinPause, time.Since(start)))
			select {
			case <-ctx.Done():
				t.Stop()
				return removed, ctx.Err()
			case <-t.C:
			}
		}
	}
	return removed, nil
}

// popupsDone lists the popups without a lifetime rule archived (and not written since) or ended
// before cutoff.
func (p *StatePurger) popupsDone(ctx context.Context, cutoff time.Time) ([]int64, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT id FROM popup_config
		WHERE max_impressions = 0 AND click_cooldown_seconds <> -1 AND close_cooldown_seconds <> -1
		AND ((status = 'archived' AND updated_at < ?) OR (status <> 'archived' AND end_at < ?)) ORDER BY id`, toDB(cutoff), toDB(cutoff))
	if err != nil {
		return nil, fmt.Errorf("find user state to purge: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("find user state to purge: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find user state to purge: %w", err)
	}
	return ids, nil
}

// stateCursor is a position in popup_user_state's (popup_id, impressions) index, whose entries
// end with the primary key's uid.
type stateCursor struct {
	impressions int64
	uid         string
	started     bool
}

// purgeBatch removes up to Batch rows of popup id after the cursor whose next-show time has
// passed, and adds the users reached among them to popup_state_purged, in one transaction. It
// returns the rows removed, the cursor after the rows it looked at, and whether there may be more.
func (p *StatePurger) purgeBatch(ctx context.Context, id int64, now time.Time, after stateCursor) (n int64, next stateCursor, more bool, err error) {
	batch := max(p.Batch, 1)
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, after, false, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	q := `SELECT impressions, uid, next_show_at <= ? FROM popup_user_state FORCE INDEX (idx_popup_user_state_popup_impressions)
		WHERE popup_id = ?`
	args := []any{toDB(now), id}
	if after.started {
		q += ` AND (impressions > ? OR (impressions = ? AND uid > ?))`
		args = append(args, after.impressions, after.impressions, after.uid)
	}
	q += ` ORDER BY impressions, uid LIMIT ? FOR UPDATE`
	args = append(args, batch)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, after, false, err
	}
	var uids []any
	var reached, seen int
	next = after
	for rows.Next() {
		var imp int64
		var uid string
		var passed bool
		if err = rows.Scan(&imp, &uid, &passed); err != nil {
			rows.Close()
			return 0, after, false, err
		}
		seen++
		next = stateCursor{impressions: imp, uid: uid, started: true}
		if passed {
			uids = append(uids, uid)
			if imp > 0 {
				reached++
			}
		}
	}
	rows.Close()
	if err = rows.Err(); err != nil {
		return 0, after, false, err
	}
	if len(uids) > 0 {
		res, err := tx.ExecContext(ctx, `DELETE FROM popup_user_state WHERE popup_id = ? AND uid IN (?`+
			strings.Repeat(",?", len(uids)-1)+`)`, append([]any{id}, uids...)...)
		if err != nil {
			return 0, after, false, err
		}
		n, _ = res.RowsAffected()
	}
	if reached > 0 {
		if _, err = tx.ExecContext(ctx, `INSERT INTO popup_state_purged (popup_id, users_reached) VALUES (?, ?)
			ON DUPLICATE KEY UPDATE users_reached = users_reached + VALUES(users_reached), updated_at = CURRENT_TIMESTAMP(3)`, id, reached); err != nil {
			return 0, after, false, err
		}
	}
	if err = tx.Commit(); err != nil {
		return 0, after, false, err
	}
	return n, next, seen == batch, nil
}
