package mysqlstore

import (
	"context"
	"database/sql"
)

// MigrateTo applies the migrations up to version only, so a test can build a database as an
// older release left it and then migrate it up.
func MigrateTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}
