package testenv

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
)

// TestMigratedCopyIsTheMigratedSchema: the migrated database a test gets (a copy of the run's
// template) has the tables, definitions, rows and schema version that migrating an empty
// database gives.
func TestMigratedCopyIsTheMigratedSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	copied := MySQL(t)
	migrated, err := mysqlstore.Open(ctx, MySQLDSN(t, false), 2)
	require.NoError(t, err)
	t.Cleanup(func() { migrated.Close() })
	_, err = mysqlstore.Migrate(ctx, migrated)
	require.NoError(t, err)

	want, got := schema(t, migrated), schema(t, copied)
	require.NotEmpty(t, want)
	for table, def := range want {
		assert.Equal(t, def, got[table], "table %s", table)
	}
	assert.Len(t, got, len(want), "tables")
	for _, db := range []*sql.DB{copied, migrated} {
		require.NoError(t, mysqlstore.CheckSchema(ctx, db))
	}
}

// schema maps each table of db to its definition and its rows as text, without the columns whose
// value is the time the row was written (goose's tstamp, updated_at).
func schema(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	ctx := context.Background()
	tables, err := queryStrings(ctx, db, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name")
	require.NoError(t, err)
	out := map[string]string{}
	for _, table := range tables {
		var name, ddl string
		require.NoError(t, db.QueryRowContext(ctx, "SHOW CREATE TABLE `"+table+"`").Scan(&name, &ddl))
		cols, err := queryStrings(ctx, db, `SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE()
			AND table_name = ? AND COALESCE(column_default, '') NOT LIKE 'current_timestamp%'
			ORDER BY ordinal_position`, table)
		require.NoError(t, err)
		out[table] = ddl + "\n" + dump(t, db, "SELECT `"+strings.Join(cols, "`, `")+"` FROM `"+table+"` ORDER BY 1")
	}
	return out
}

func dump(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var b strings.Builder
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			b.WriteString(v.String + "\t")
		}
		b.WriteString("\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}
