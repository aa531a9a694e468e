package mysqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// ErrSchema means the database schema does not match what this binary was built for.
var ErrSchema = errors.New("schema mismatch")

// Migrations returns the migration files this binary embeds (testenv keys its migrated template
// database on their contents).
func Migrations() fs.FS {
	dir, err := fs.Sub(migrationsFS, "migrations")
	if err != nil {
		panic(err) // a constant, valid path of the embedded tree
	}
	return dir
}

func provider(db *sql.DB) (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectMySQL, db, Migrations(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration; running it again is a no-op.
func Migrate(ctx context.Context, db *sql.DB) (applied []int64, err error) {
	p, err := provider(db)
	if err != nil {
		return nil, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	for _, r := range res {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// SchemaVersions returns the database's schema version and the newest one this binary embeds.
func SchemaVersions(ctx context.Context, db *sql.DB) (current, latest int64, err error) {
	p, err := provider(db)
	if err != nil {
		return 0, 0, err
	}
	srcs := p.ListSources()
	if len(srcs) > 0 {
		latest = srcs[len(srcs)-1].Version
	}
	current, err = p.GetDBVersion(ctx)
	if err != nil {
		// goose reports a missing version table as an error: that is an unmigrated database.
		var exists int
		qerr := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name = 'goose_db_version'`).Scan(&exists)
		if qerr == nil && exists == 0 {
			return 0, latest, nil
		}
		return 0, latest, fmt.Errorf("read schema version: %w", err)
	}
	return current, latest, nil
}

// CheckSchema refuses an unmigrated or newer schema with a message that says what to do.
func CheckSchema(ctx context.Context, db *sql.DB) error {
	current, latest, err := SchemaVersions(ctx, db)
	if err != nil {
		return err
	}
	switch {
	case current < latest:
		return fmt.Errorf("%w: database schema is at version %d, this binary needs %d: run `popup-worker migrate`", ErrSchema, current, latest)
	case current > latest:
		return fmt.Errorf("%w: database schema is at version %d, newer than this binary's %d: deploy the newer binary", ErrSchema, current, latest)
	}
	return nil
}
