package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"popupsvc/internal/popup"
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

// The names of the pacing settings (docs/CONTRACT.md §13): whole numbers, written together.
const (
	SettingMinGapSeconds = "min_gap_seconds"
	SettingDailyCap      = "daily_cap"
)

// Pacing returns the team's pacing across campaigns, nil when it was never set.
func (r *SettingsRepo) Pacing(ctx context.Context) (*popup.Pacing, error) {
	return readPacing(ctx, r.db)
}

// readPacing reads the pacing settings through q (the database, or a snapshot's transaction):
// nil when neither was ever set. SetPacing writes both, so one alone is a row written by hand,
// and the other reads as 0.
func readPacing(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (*popup.Pacing, error) {
	rows, err := q.QueryContext(ctx, "SELECT name, value FROM popup_setting WHERE name IN (?, ?)", SettingMinGapSeconds, SettingDailyCap)
	if err != nil {
		return nil, fmt.Errorf("read pacing: %w", err)
	}
	defer rows.Close()
	var p *popup.Pacing
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("read pacing: %w", err)
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("read pacing: setting %s is %q, not a whole number", name, value)
		}
		if p == nil {
			p = &popup.Pacing{}
		}
		if name == SettingMinGapSeconds {
			p.MinGap = time.Duration(n) * time.Second
		} else {
			p.DailyCap = int(n)
		}
	}
	return p, rows.Err()
}

// SetPacing stores the team's pacing on behalf of actor and returns the pacing it replaced (nil:
// never set), and bumps the config version in the same transaction: pacing is part of every
// snapshot, so a change reaches every instance as a config change does (Reload, then the
// announcement).
func (r *SettingsRepo) SetPacing(ctx context.Context, actor string, p popup.Pacing) (old *popup.Pacing, err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("set pacing: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// The version row first: pacing writes, like popup writes, are serialised on it.
	if _, err = tx.ExecContext(ctx, `UPDATE popup_config_version SET version = version + 1, updated_at = CURRENT_TIMESTAMP(3) WHERE id = 1`); err != nil {
		return nil, fmt.Errorf("set pacing: bump config version: %w", err)
	}
	if old, err = readPacing(ctx, tx); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		name  string
		value int64
	}{{SettingMinGapSeconds, int64(p.MinGap / time.Second)}, {SettingDailyCap, int64(p.DailyCap)}} {
		if _, err = tx.ExecContext(ctx, `INSERT INTO popup_setting (name, value, updated_by) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE value = VALUES(value), updated_by = VALUES(updated_by), updated_at = CURRENT_TIMESTAMP(3)`,
			s.name, strconv.FormatInt(s.value, 10), actor); err != nil {
			return nil, fmt.Errorf("set pacing: %w", err)
		}
	}
	if err = tx.Commit(); err != nil {
		return nil, fmt.Errorf("set pacing: %w", err)
	}
	return old, nil
}
