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

// Version returns the current config version: the tests' check that a write bumped it (or did
// not). Production reads it with the popups, in Snapshot.
func (r *PopupRepo) Version(ctx context.Context) (int64, error) {
	var v int64
	err := r.db.QueryRowContext(ctx, `SELECT version FROM popup_config_version WHERE id = 1`).Scan(&v)
	return v, err
}

// MigrateDownTo rolls the schema back to version.
func MigrateDownTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}
