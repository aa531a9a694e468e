package mysqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

func TestMigrateIsIdempotentAndCheckSchemaFollowsIt(t *testing.T) {
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, testenv.MySQLDSN(t, false), 2)
	require.NoError(t, err)
	defer db.Close()

	err = mysqlstore.CheckSchema(ctx, db)
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

func TestActionLogRejectsDuplicateEventID(t *testing.T) {
	ctx := context.Background()
	db := testenv.MySQL(t)
	const q = "INSERT INTO popup_action_log (event_id, uid, popup_id, action, event_at) VALUES ('e1', 'u1', 1, 'click', UTC_TIMESTAMP(3))"
	_, err := db.ExecContext(ctx, q)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, q)
	assert.Error(t, err, "event_id is unique")
}
