package mysqlstore_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

// openAt opens a database of its own for t, migrated up to version only (0: not at all), as an
// older release left it.
func openAt(t *testing.T, version int64) *sql.DB {
	t.Helper()
	db, err := mysqlstore.Open(context.Background(), testenv.MySQLDSN(t, false), 2)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	if version > 0 {
		require.NoError(t, mysqlstore.MigrateTo(context.Background(), db, version))
	}
	return db
}

func TestMigrateIsIdempotentAndCheckSchemaFollowsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 0)

	err := mysqlstore.CheckSchema(ctx, db)
	require.ErrorIs(t, err, mysqlstore.ErrSchema, "an unmigrated database is refused")
	assert.Contains(t, err.Error(), "popup-worker migrate")

	applied, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	assert.NotEmpty(t, applied)
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))

	again, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, again, "a second migrate applies nothing")
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))

	for _, table := range []string{"popup_config", "popup_config_version", "popup_user_state", "popup_action_log"} {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", table).Scan(&n))
		assert.Equal(t, 1, n, table)
	}

	// A schema newer than the binary is refused too.
	_, err = db.ExecContext(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (999999, 1)")
	require.NoError(t, err)
	err = mysqlstore.CheckSchema(ctx, db)
	require.ErrorIs(t, err, mysqlstore.ErrSchema)
	assert.Contains(t, err.Error(), "newer")
}

func TestActionLogEventIDIsUniquePerUIDAndTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	const q = "INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES ('e1', ?, 1, 'click', ?)"
	at := "2026-03-01 10:00:00.123"
	_, err := db.ExecContext(ctx, q, "u1", at)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, q, "u1", at)
	assert.Error(t, err, "(uid, event_id, event_at) is unique: a redelivered event")
	_, err = db.ExecContext(ctx, q, "u2", at)
	assert.NoError(t, err, "another uid may use the same event_id")
	_, err = db.ExecContext(ctx, q, "u1", "2026-03-02 10:00:00")
	assert.NoError(t, err, "the same event_id at another time is another event (migration 00015)")
}

func TestMigration2UpgradesAVersion1DatabaseHoldingData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, 1)
	_, err := db.ExecContext(ctx, `INSERT INTO popup_config (name, targeting, content) VALUES ('old one', '{}', '{}'), ('old two', '{}', '{}')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at)
		VALUES ('e1', 'u1', 1, 'click', '2026-03-01 10:00:00'), ('e2', 'u1', 1, 'close', '2026-03-01 10:00:00')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES ('e1', 'u2', 1, 'click', '2026-03-01 10:00:00')`)
	require.Error(t, err, "version 1: event_id is globally unique")

	applied, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	require.NotEmpty(t, applied)
	assert.Equal(t, int64(2), applied[0], "version 2 first, then the later ones")
	again, err := mysqlstore.Migrate(ctx, db)
	require.NoError(t, err)
	assert.Empty(t, again, "migrating twice is a no-op")
	require.NoError(t, mysqlstore.CheckSchema(ctx, db))

	var revisions []int64
	rows, err := db.QueryContext(ctx, `SELECT revision FROM popup_config ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var r int64
		require.NoError(t, rows.Scan(&r))
		revisions = append(revisions, r)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []int64{1, 1}, revisions, "existing popups start at revision 1")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log`).Scan(&n))
	assert.Equal(t, 2, n, "the action log is kept")
	_, err = db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES ('e1', 'u2', 1, 'click', '2026-03-01 10:00:00')`)
	assert.NoError(t, err, "version 2: another uid may reuse an event_id")
	_, err = db.ExecContext(ctx, `INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES ('e1', 'u1', 1, 'click', '2026-03-01 10:00:00')`)
	assert.Error(t, err, "still unique per uid (and, from version 15, time)")
}
