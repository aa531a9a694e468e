package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerDropsTheActionLogDaysPastItsRetention starts the real binary with a 24 h retention
// over a log holding rows of 40 days ago (in a partition of their own) and of an hour ago: it
// drops the old day at start, counts it in its metrics, and leaves the recent rows, the daily
// stats and the user state.
func TestWorkerDropsTheActionLogDaysPastItsRetention(t *testing.T) {
	t.Parallel()
	w := newWorkerEnv(t, 1)
	db := openDB(t, w.dsn)
	ctx := context.Background()
	now := time.Now().UTC()
	var q strings.Builder
	q.WriteString("INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES ")
	var args []any
	for i := range 2500 {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?)")
		at := now.Add(-40 * 24 * time.Hour)
		if i%5 == 0 {
			at = now.Add(-time.Hour)
		}
		args = append(args, fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i%50), 1+i%3, "impression", at)
	}
	_, err := db.ExecContext(ctx, q.String(), args...)
	require.NoError(t, err)
	// The log of a worker that has been running for weeks: the days before the migration's first
	// in a partition of their own.
	var first string
	var bound int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM information_schema.PARTITIONS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'popup_action_log' AND PARTITION_ORDINAL_POSITION = 1`).Scan(&first, &bound))
	_, err = db.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE popup_action_log REORGANIZE PARTITION %s INTO
		(PARTITION pold VALUES LESS THAN (TO_DAYS(?) + 1), PARTITION %[1]s VALUES LESS THAN (%d))`, first, bound), now.Add(-40*24*time.Hour))
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_daily_stats (popup_id, day, impressions) VALUES (1, '2020-01-01', 7)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_user_state (uid, popup_id, impressions) VALUES ('u1', 1, 3)`)
	require.NoError(t, err)

	addr := freeAddr(t)
	p := startWorker(t, w.with("POPUP_WORKER_ADDR="+addr, "POPUP_ACTION_LOG_RETENTION=24h"), newLogSink(t))
	waitHealthy(t, addr)
	require.Eventually(t, func() bool {
		return bytes.Contains(scrape(addr), []byte("popup_worker_action_log_dropped_days_total 1"))
	}, 20*time.Second, 50*time.Millisecond, "the old day is dropped and counted")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.waitExit(t, 20*time.Second).ExitStatus())

	var left, old, stats, states int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(event_at < ?), 0) FROM popup_action_log`, now.Add(-24*time.Hour)).Scan(&left, &old))
	require.NoError(t, db.QueryRow(`SELECT impressions FROM popup_daily_stats WHERE popup_id = 1 AND day = '2020-01-01'`).Scan(&stats))
	require.NoError(t, db.QueryRow(`SELECT impressions FROM popup_user_state WHERE uid = 'u1' AND popup_id = 1`).Scan(&states))
	assert.Equal(t, 500, left, "recent rows are kept")
	assert.Zero(t, old)
	assert.Equal(t, 7, stats, "daily stats are kept")
	assert.Equal(t, 3, states, "user state is kept")
}
