package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"popupsvc/internal/popup"
)

// PopupRepo is the source of truth for popup configs. Every write bumps the config version in
// the same transaction, so a reader of (version, popups) never sees one without the other.
type PopupRepo struct{ db *sql.DB }

// NewPopupRepo returns a repository over db.
func NewPopupRepo(db *sql.DB) *PopupRepo { return &PopupRepo{db: db} }

// content is the JSON stored in popup_config.content.
type content struct {
	Title    string          `json:"title"`
	Content  string          `json:"content"`
	ImageURL string          `json:"image_url"`
	LinkURL  string          `json:"link_url"`
	Buttons  []popup.Button  `json:"buttons"`
	Ext      json.RawMessage `json:"ext"`
}

const popupColumns = `id, name, status, priority, start_at, end_at, reshow_after_seconds,
	click_cooldown_seconds, close_cooldown_seconds, max_impressions, targeting, content, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanPopup(s scanner) (popup.Popup, error) {
	var (
		p               popup.Popup
		start, end      sql.NullTime
		status          string
		targeting, body []byte
	)
	err := s.Scan(&p.ID, &p.Name, &status, &p.Priority, &start, &end, &p.ReshowAfterSeconds,
		&p.ClickCooldownSeconds, &p.CloseCooldownSeconds, &p.MaxImpressions, &targeting, &body, &p.CreatedAt, &p.UpdatedAt)
	if err != nil {
		return popup.Popup{}, err
	}
	p.Status = popup.Status(status)
	if start.Valid {
		t := start.Time.UTC()
		p.StartAt = &t
	}
	if end.Valid {
		t := end.Time.UTC()
		p.EndAt = &t
	}
	if err := json.Unmarshal(targeting, &p.Targeting); err != nil {
		return popup.Popup{}, fmt.Errorf("popup %d targeting: %w", p.ID, err)
	}
	var c content
	if err := json.Unmarshal(body, &c); err != nil {
		return popup.Popup{}, fmt.Errorf("popup %d content: %w", p.ID, err)
	}
	p.Title, p.Content, p.ImageURL, p.LinkURL, p.Buttons, p.Ext = c.Title, c.Content, c.ImageURL, c.LinkURL, c.Buttons, c.Ext
	if p.Buttons == nil {
		p.Buttons = []popup.Button{}
	}
	if len(p.Ext) == 0 {
		p.Ext = json.RawMessage(`{}`)
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p, nil
}

func encodeParts(p popup.Popup) (targeting, body []byte, err error) {
	if targeting, err = json.Marshal(p.Targeting); err != nil {
		return nil, nil, err
	}
	body, err = json.Marshal(content{Title: p.Title, Content: p.Content, ImageURL: p.ImageURL,
		LinkURL: p.LinkURL, Buttons: p.Buttons, Ext: p.Ext})
	return targeting, body, err
}

func nullTime(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: t.UTC(), Valid: true}
}

// List returns the popups ordered by id; archived ones only when asked.
func (r *PopupRepo) List(ctx context.Context, includeArchived bool) ([]popup.Popup, error) {
	q := `SELECT ` + popupColumns + ` FROM popup_config`
	if !includeArchived {
		q += ` WHERE status <> 'archived'`
	}
	return r.query(ctx, r.db, q+` ORDER BY id`)
}

func (r *PopupRepo) query(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]popup.Popup, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list popups: %w", err)
	}
	defer rows.Close()
	out := []popup.Popup{}
	for rows.Next() {
		p, err := scanPopup(rows)
		if err != nil {
			return nil, fmt.Errorf("scan popup: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Snapshot reads the version and every non-archived popup in one consistent read.
func (r *PopupRepo) Snapshot(ctx context.Context) (version int64, popups []popup.Popup, err error) {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return 0, nil, fmt.Errorf("snapshot: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	if err := tx.QueryRowContext(ctx, `SELECT version FROM popup_config_version WHERE id = 1`).Scan(&version); err != nil {
		return 0, nil, fmt.Errorf("snapshot version: %w", err)
	}
	popups, err = r.query(ctx, tx, `SELECT `+popupColumns+` FROM popup_config WHERE status <> 'archived' ORDER BY id`)
	if err != nil {
		return 0, nil, err
	}
	return version, popups, tx.Commit()
}

// Version returns the current config version.
func (r *PopupRepo) Version(ctx context.Context) (int64, error) {
	var v int64
	err := r.db.QueryRowContext(ctx, `SELECT version FROM popup_config_version WHERE id = 1`).Scan(&v)
	return v, err
}

// Get returns one popup, archived or not.
func (r *PopupRepo) Get(ctx context.Context, id int64) (popup.Popup, error) {
	p, err := scanPopup(r.db.QueryRowContext(ctx, `SELECT `+popupColumns+` FROM popup_config WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Popup{}, fmt.Errorf("popup %d: %w", id, popup.ErrNotFound)
	}
	return p, err
}

// Create stores a new popup and returns it with its id.
func (r *PopupRepo) Create(ctx context.Context, p popup.Popup) (popup.Popup, error) {
	targeting, body, err := encodeParts(p)
	if err != nil {
		return popup.Popup{}, err
	}
	var id int64
	err = r.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO popup_config (name, status, priority, start_at, end_at,
			reshow_after_seconds, click_cooldown_seconds, close_cooldown_seconds, max_impressions, targeting, content)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.Name, string(p.Status), p.Priority, nullTime(p.StartAt), nullTime(p.EndAt), p.ReshowAfterSeconds,
			p.ClickCooldownSeconds, p.CloseCooldownSeconds, p.MaxImpressions, targeting, body)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("create popup: %w", err)
	}
	return r.Get(ctx, id)
}

// Update replaces popup id with p.
func (r *PopupRepo) Update(ctx context.Context, id int64, p popup.Popup) (popup.Popup, error) {
	targeting, body, err := encodeParts(p)
	if err != nil {
		return popup.Popup{}, err
	}
	err = r.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE popup_config SET name = ?, status = ?, priority = ?, start_at = ?,
			end_at = ?, reshow_after_seconds = ?, click_cooldown_seconds = ?, close_cooldown_seconds = ?,
			max_impressions = ?, targeting = ?, content = ?, updated_at = CURRENT_TIMESTAMP(3) WHERE id = ?`,
			p.Name, string(p.Status), p.Priority, nullTime(p.StartAt), nullTime(p.EndAt), p.ReshowAfterSeconds,
			p.ClickCooldownSeconds, p.CloseCooldownSeconds, p.MaxImpressions, targeting, body, id)
		if err != nil {
			return err
		}
		return mustExist(ctx, tx, res, id)
	})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("update popup %d: %w", id, err)
	}
	return r.Get(ctx, id)
}

// Archive sets a popup's status to archived (DELETE in the admin API: rows are never removed,
// the action log refers to them).
func (r *PopupRepo) Archive(ctx context.Context, id int64) (popup.Popup, error) {
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE popup_config SET status = 'archived', updated_at = CURRENT_TIMESTAMP(3) WHERE id = ?`, id)
		if err != nil {
			return err
		}
		return mustExist(ctx, tx, res, id)
	})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("archive popup %d: %w", id, err)
	}
	return r.Get(ctx, id)
}

// mustExist turns "no row changed" into ErrNotFound (a no-op update of an existing row also
// changes nothing, hence the lookup).
func mustExist(ctx context.Context, tx *sql.Tx, res sql.Result, id int64) error {
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return nil
	}
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM popup_config WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return popup.ErrNotFound
	} else if err != nil {
		return err
	}
	return nil
}

// inTx runs fn and bumps the config version in the same transaction.
func (r *PopupRepo) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE popup_config_version SET version = version + 1, updated_at = CURRENT_TIMESTAMP(3) WHERE id = 1`); err != nil {
		return err
	}
	return tx.Commit()
}
