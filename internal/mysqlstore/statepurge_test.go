package mysqlstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/report"
	"popupsvc/internal/testenv"
)

func TestStatePurgeRemovesOnlyRowsNoDecisionCanUseAndKeepsTheReach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	day := 24 * time.Hour
	cutoff := now.Add(-90 * day)

	// popup: status, when it was last written, end_at, and its lifetime rules.
	type popupRow struct {
		status             string
		updated, end       time.Time
		maxImp, click, cls int
	}
	popups := map[string]popupRow{
		"archived long ago":               {"archived", now.Add(-100 * day), time.Time{}, 0, 0, 86400},
		"archived, capped":                {"archived", now.Add(-100 * day), time.Time{}, 3, 0, 86400},
		"ended long ago, closed for good": {"active", now.Add(-100 * day), now.Add(-100 * day), 0, 0, -1},
		"ended lately":                    {"active", now.Add(-100 * day), now.Add(-10 * day), 0, 0, 86400},
		"running":                         {"active", now.Add(-100 * day), time.Time{}, 0, 0, 86400},
		"ended long ago, many users":      {"paused", now, now.Add(-95 * day), 0, 0, 86400},
	}
	ids := map[string]int64{}
	for name, p := range popups {
		var end any
		if !p.end.IsZero() {
			end = p.end
		}
		res, err := db.ExecContext(ctx, `INSERT INTO popup_config (name, status, updated_at, end_at, max_impressions,
			click_cooldown_seconds, close_cooldown_seconds, targeting, content) VALUES (?, ?, ?, ?, ?, ?, ?, '{}', '{}')`,
			name, p.status, p.updated, end, p.maxImp, p.click, p.cls)
		require.NoError(t, err)
		ids[name], err = res.LastInsertId()
		require.NoError(t, err)
	}
	// Every popup: a user shown it whose hiding has passed, one who only closed it (no
	// impression), and one still hidden for 200 days; the last popup 2,500 users more.
	states := func(id int64, users int) {
		var q strings.Builder
		q.WriteString("INSERT INTO popup_user_state (uid, popup_id, impressions, next_show_at) VALUES ")
		var args []any
		for i := range users + 3 {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?,?)")
			imp, next := 1+i%2, now.Add(-50*day)
			switch i {
			case 1:
				imp = 0
			case 2:
				next = now.Add(200 * day)
			}
			args = append(args, fmt.Sprintf("u%d", i), id, imp, next)
		}
		_, err := db.ExecContext(ctx, q.String(), args...)
		require.NoError(t, err)
	}
	for name, id := range ids {
		n := 0
		if name == "ended long ago, many users" {
			n = 2500
		}
		states(id, n)
	}
	stats := mysqlstore.NewStatsRepo(db)
	reached := func(name string) int64 {
		s, err := stats.PopupStats(ctx, ids[name], report.StatsQuery{Bounds: []time.Time{now.Truncate(day), now.Truncate(day).Add(day)}, UTC: true})
		require.NoError(t, err)
		return s.UsersReached
	}
	before := map[string]int64{}
	for name := range ids {
		before[name] = reached(name)
	}

	p := mysqlstore.NewStatePurger(db)
	p.Batch, p.MinPause = 1000, time.Millisecond
	var batches []int64
	removed, err := p.Purge(ctx, now, cutoff, func(n int64) { batches = append(batches, n) })
	require.NoError(t, err)
	assert.Equal(t, int64(2+2502), removed, "the passed rows of the two popups done long ago without lifetime rules")
	for _, n := range batches {
		assert.LessOrEqual(t, n, int64(1000))
	}
	left := func(name string) int {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_user_state WHERE popup_id = ?`, ids[name]).Scan(&n))
		return n
	}
	assert.Equal(t, 1, left("archived long ago"), "the row still hiding the popup stays")
	assert.Equal(t, 1, left("ended long ago, many users"))
	for _, name := range []string{"archived, capped", "ended long ago, closed for good", "ended lately", "running"} {
		assert.Equal(t, 3, left(name), "%s keeps every row", name)
	}
	for name := range ids {
		assert.Equal(t, before[name], reached(name), "users reached of %s", name)
	}

	again, err := p.Purge(ctx, now, cutoff, nil)
	require.NoError(t, err)
	assert.Zero(t, again, "nothing left to purge")
}
