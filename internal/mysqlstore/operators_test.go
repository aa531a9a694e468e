package mysqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
)

// TestConcurrentFirstStartsRecordEachOperatorOnce: starts of popup-api at once on an empty
// operator table take turns: every operator is recorded as added once, not once per start.
func TestConcurrentFirstStartsRecordEachOperatorOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 0)
	_, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	ops := []operator.Operator{{Name: "ana", Role: popup.RoleEditor, Token: "t-ana"}, {Name: "admin", Role: popup.RoleAdmin, Token: "t-admin"}}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = mysqlstore.NewOperatorLog(db).Sync(ctx, ops, at)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_operator_change WHERE action = 'add'`).Scan(&n))
	assert.Equal(t, 2, n)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_operator_change`).Scan(&n))
	assert.Equal(t, 2, n, "the later starts found the same operators")
}

// TestMigration24CopiesThePastErasuresIntoTheAuditLog: the erasures asked and done before the
// privacy requests had a log of their own are in it, oldest first, by whom they were asked.
func TestMigration24CopiesThePastErasuresIntoTheAuditLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 23)
	_, err := db.ExecContext(ctx, `INSERT INTO privacy_erasure (id, uid_hash, status, requested_at, requested_by, requested_role, done_at, removed) VALUES
		('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', REPEAT('1', 64), 'done', '2026-11-01 10:00:00', 'dpo', 'admin', '2026-11-01 10:01:00', '{}'),
		('bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', REPEAT('2', 64), 'pending', '2026-11-01 10:00:30', 'admin', NULL, NULL, NULL)`)
	require.NoError(t, err)
	require.NoError(t, mysqlstore.MigrateTo(ctx, db, 24))
	rows, err := db.QueryContext(ctx, `SELECT actor, action, erasure_id FROM privacy_request_change ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var got []string
	for rows.Next() {
		var actor, action, id string
		require.NoError(t, rows.Scan(&actor, &action, &id))
		got = append(got, actor+" "+action+" "+id[:1])
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"dpo erasure a", "admin erasure b", "(erasure) erased a"}, got)
}
