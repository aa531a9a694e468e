package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"popupsvc/internal/popup"
	"popupsvc/internal/report"
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
	var was *string
	err = tx.QueryRowContext(ctx, "SELECT value FROM popup_setting WHERE name = ? FOR UPDATE", name).Scan(&old)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		old = def
	case err != nil:
		return "", fmt.Errorf("set setting %s: %w", name, err)
	default:
		was = &old
	}
	if _, err = tx.ExecContext(ctx, `INSERT INTO popup_setting (name, value, updated_by) VALUES (?, ?, ?)
		ON DUPLICATE KEY UPDATE value = VALUES(value), updated_by = VALUES(updated_by), updated_at = CURRENT_TIMESTAMP(3)`,
		name, value, actor); err != nil {
		return "", fmt.Errorf("set setting %s: %w", name, err)
	}
	if err = recordSettingChange(ctx, tx, actor, name, was, value); err != nil {
		return "", err
	}
	if err = tx.Commit(); err != nil {
		return "", fmt.Errorf("set setting %s: %w", name, err)
	}
	return old, nil
}

// recordSettingChange records a setting's change for the audit log (popup_setting_change), in
// the write's transaction: nothing when the value stays what it was (was nil: never set).
func recordSettingChange(ctx context.Context, tx *sql.Tx, actor, name string, was *string, value string) error {
	if was != nil && *was == value {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO popup_setting_change (actor, name, old_value, new_value) VALUES (?, ?, ?, ?)`,
		actor, name, was, value); err != nil {
		return fmt.Errorf("record the change of setting %s: %w", name, err)
	}
	return nil
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
		var was *string
		if old != nil {
			v := int64(old.MinGap / time.Second)
			if s.name == SettingDailyCap {
				v = int64(old.DailyCap)
			}
			w := strconv.FormatInt(v, 10)
			was = &w
		}
		if err = recordSettingChange(ctx, tx, actor, s.name, was, strconv.FormatInt(s.value, 10)); err != nil {
			return nil, err
		}
	}
	if err = tx.Commit(); err != nil {
		return nil, fmt.Errorf("set pacing: %w", err)
	}
	return old, nil
}

// The global holdout (docs/CONTRACT.md §15): popup_holdout_phase holds one row per phase, the
// setting's history; the running phase is the row without an end.

// holdoutColumns are what scanHoldout reads.
const holdoutColumns = "phase, percent, salt, started_at, ended_at, started_by, COALESCE(ended_by, '')"

func scanHoldout(s interface{ Scan(...any) error }) (report.HoldoutPhase, error) {
	var (
		p     report.HoldoutPhase
		ended sql.NullTime
	)
	if err := s.Scan(&p.Phase, &p.Percent, &p.Salt, &p.StartedAt, &ended, &p.StartedBy, &p.EndedBy); err != nil {
		return report.HoldoutPhase{}, err
	}
	p.StartedAt = p.StartedAt.UTC()
	if ended.Valid {
		p.EndedAt = ended.Time.UTC()
	}
	return p, nil
}

// readHoldout reads the latest holdout phase through q (the zero value when there was none),
// with lock appended to the statement ("" or "FOR UPDATE").
func readHoldout(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, lock string) (popup.Holdout, error) {
	p, err := scanHoldout(q.QueryRowContext(ctx, `SELECT `+holdoutColumns+` FROM popup_holdout_phase ORDER BY phase DESC LIMIT 1 `+lock))
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Holdout{}, nil
	}
	if err != nil {
		return popup.Holdout{}, fmt.Errorf("read holdout: %w", err)
	}
	return p.Holdout, nil
}

// Holdout returns the latest holdout phase, running or ended (the zero value: never set).
func (r *SettingsRepo) Holdout(ctx context.Context) (popup.Holdout, error) {
	return readHoldout(ctx, r.db, "")
}

// HoldoutPhases returns every holdout phase, the latest first.
func (r *SettingsRepo) HoldoutPhases(ctx context.Context) ([]report.HoldoutPhase, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+holdoutColumns+` FROM popup_holdout_phase ORDER BY phase DESC`)
	if err != nil {
		return nil, fmt.Errorf("read holdout phases: %w", err)
	}
	defer rows.Close()
	var out []report.HoldoutPhase
	for rows.Next() {
		p, err := scanHoldout(rows)
		if err != nil {
			return nil, fmt.Errorf("read holdout phases: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// SetHoldout sets the holdout percentage to percent on behalf of actor at now, under the domain's
// rule (popup.Holdout.Change): the same percentage writes nothing; another ends the running phase
// and, unless percent is 0, starts the next one. A change bumps the config version in the same
// transaction, so that it reaches every instance as a config change does. It returns the latest
// phase before and after, and whether anything changed.
func (r *SettingsRepo) SetHoldout(ctx context.Context, actor string, percent int, now time.Time) (old, cur popup.Holdout, changed bool, err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return old, cur, false, fmt.Errorf("set holdout: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// The version row first, as every config write: holdout writes are serialised on it.
	if _, err = tx.ExecContext(ctx, `UPDATE popup_config_version SET version = version + 1, updated_at = CURRENT_TIMESTAMP(3) WHERE id = 1`); err != nil {
		return old, cur, false, fmt.Errorf("set holdout: bump config version: %w", err)
	}
	if old, err = readHoldout(ctx, tx, "FOR UPDATE"); err != nil {
		return old, cur, false, err
	}
	next, ended, changed := old.Change(percent, now)
	if !changed {
		_ = tx.Rollback() // nothing to write: not even the version
		return old, old, false, nil
	}
	if ended.Phase > 0 {
		if _, err = tx.ExecContext(ctx, `UPDATE popup_holdout_phase SET ended_at = ?, ended_by = ? WHERE phase = ?`,
			ended.EndedAt, actor, ended.Phase); err != nil {
			return old, cur, false, fmt.Errorf("set holdout: end phase %d: %w", ended.Phase, err)
		}
	}
	if next.Running() {
		if _, err = tx.ExecContext(ctx, `INSERT INTO popup_holdout_phase (phase, percent, salt, started_at, started_by) VALUES (?, ?, ?, ?, ?)`,
			next.Phase, next.Percent, next.Salt, next.StartedAt, actor); err != nil {
			return old, cur, false, fmt.Errorf("set holdout: start phase %d: %w", next.Phase, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return old, cur, false, fmt.Errorf("set holdout: %w", err)
	}
	return old, next, true, nil
}
