package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SettingsRepo reads and writes the team's settings (popup_setting: one row per name).
type SettingsRepo struct{ db *sql.DB }

// NewSettingsRepo returns a settings store over db.
func NewSettingsRepo(db *sql.DB) *SettingsRepo { return &SettingsRepo{db: db} }

// SettingReportingTimeZone is the name of the reporting time zone setting (an IANA name).
const SettingReportingTimeZone = "reporting_time_zone"

// Get returns the value of setting name, or def when it was never set.
func (r *SettingsRepo) Get(ctx context.Context, name, def string) (string, error) {
	var v string
	err := r.db.QueryRowContext(ctx, "SELECT value FROM popup_setting WHERE name = ?", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return def, nil
	}
	if err != nil {
		return "", fmt.Errorf("read setting %s: %w", name, err)
	}
	return v, nil
}

// Set stores value for setting name on behalf of actor and returns the value it replaced (def
// when it was never set), read and written in one transaction.
func (r *SettingsRepo) Set(ctx context.Context, actor, name, value, def string) (old string, err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("set setting %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	err = tx.QueryRowContext(ctx, "SELECT value FROM popup_setting WHERE name = ? FOR UPDATE", name).Scan(&old)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		old = def
	case err != nil:
		return "", fmt.Errorf("set setting %s: %w", name, err)
	}
	if _, err = tx.ExecContext(ctx, `INSERT INTO popup_setting (name, value, updated_by) VALUES (?, ?, ?)
		ON DUPLICATE KEY UPDATE value = VALUES(value), updated_by = VALUES(updated_by), updated_at = CURRENT_TIMESTAMP(3)`,
		name, value, actor); err != nil {
		return "", fmt.Errorf("set setting %s: %w", name, err)
	}
	if err = tx.Commit(); err != nil {
		return "", fmt.Errorf("set setting %s: %w", name, err)
	}
	return old, nil
}
