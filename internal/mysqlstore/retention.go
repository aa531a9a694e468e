package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// LogPurger removes action-log rows older than the retention, in small deletes paced so that the
// worker's batch writes keep the table to themselves most of the time.
//
// It walks the existing (popup_id, event_at) index: one loose index scan finds each popup's
// oldest event (SELECT popup_id, MIN(event_at) ... GROUP BY popup_id reads one index entry per
// popup), then, for each popup with rows before the cutoff, DELETE ... WHERE popup_id = ? AND
// event_at < ? ORDER BY event_at LIMIT n deletes along that index until a delete comes back
// short. No index is added for it: every insert would pay for one forever, for a job that runs
// every few minutes.
//
// De-duplication after the purge: the action log's (uid, event_id) key only remembers an event
// while its row lives. A retry of an event older than the retention (the API's per-event marker
// in Redis lives 24 hours, so only a client retrying after that long, or a worker redelivering a
// batch stuck that long) is accepted again and counted again in the daily stats.
type LogPurger struct {
	db *sql.DB
	// Batch is the most rows one DELETE removes (its transaction holds their locks).
	Batch int
	// MinPause is the least time between two deletes; after a delete that took longer, the
	// purger pauses as long as it took, so it uses at most half of one connection's time.
	MinPause time.Duration
}

// NewLogPurger returns a purger of 1,000-row deletes at most every 20 ms.
func NewLogPurger(db *sql.DB) *LogPurger {
	return &LogPurger{db: db, Batch: 1000, MinPause: 20 * time.Millisecond}
}

// Purge deletes the action-log rows whose event time is before cutoff and returns how many it
// removed, calling onRows after each delete (metrics). It stops early, with ctx's error, when
// ctx ends. Daily stats and user state are not touched.
func (p *LogPurger) Purge(ctx context.Context, cutoff time.Time, onRows func(int64)) (removed int64, err error) {
	popups, err := p.popupsBefore(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	batch := max(p.Batch, 1)
	for _, id := range popups {
		conflicts := 0
		for {
			start := time.Now()
			res, err := p.db.ExecContext(ctx, `DELETE FROM popup_action_log
				WHERE popup_id = ? AND event_at < ? ORDER BY event_at LIMIT ?`, id, toDB(cutoff), batch)
			var n int64
			switch {
			case err == nil:
				n, _ = res.RowsAffected()
				removed += n
				if onRows != nil && n > 0 {
					onRows(n)
				}
			case isLockConflict(err) && conflicts < maxPurgeConflicts:
				// A worker's batch writing late events of this popup holds the rows: the batch
				// wins, and the purge runs this delete again after its pause.
				conflicts++
				n = int64(batch)
			default:
				return removed, fmt.Errorf("purge action log of popup %d: %w", id, err)
			}
			t := time.NewTimer(max(p.MinPause, time.Since(start)))
			select {
			case <-ctx.Done():
				t.Stop()
				return removed, ctx.Err()
			case <-t.C:
			}
			if n < int64(batch) {
				break
			}
		}
	}
	return removed, nil
}

// maxPurgeConflicts bounds the deadlocks and lock wait timeouts one popup's purge rides out
// before giving up until the next run.
const maxPurgeConflicts = 10

// isLockConflict reports a deadlock or lock wait timeout: the statement lost to another
// transaction and may simply run again.
func isLockConflict(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// popupsBefore lists the popups whose oldest action-log row is before cutoff.
func (p *LogPurger) popupsBefore(ctx context.Context, cutoff time.Time) ([]int64, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT popup_id, MIN(event_at) FROM popup_action_log GROUP BY popup_id`)
	if err != nil {
		return nil, fmt.Errorf("find action log to purge: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		var oldest time.Time
		if err := rows.Scan(&id, &oldest); err != nil {
			return nil, fmt.Errorf("find action log to purge: %w", err)
		}
		if oldest.Before(cutoff) {
			ids = append(ids, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find action log to purge: %w", err)
	}
	return ids, nil
}
