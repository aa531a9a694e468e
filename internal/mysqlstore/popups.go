package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"popupsvc/internal/popup"
)

// PopupRepo is the source of truth for popup configs. Every write bumps the config version in
// the same transaction, so a reader of (version, popups) never sees one without the other, and
// the popup's own revision, which a conditional write checks in its UPDATE.
type PopupRepo struct{ db *sql.DB }

// NewPopupRepo returns a repository over db.
func NewPopupRepo(db *sql.DB) *PopupRepo { return &PopupRepo{db: db} }

// The JSON held in popup_config.targeting and popup_config.content (and, copied verbatim, in the
// revision and audit documents, including those migration 00004 wrote). These are storage
// shapes, not the domain type: existing rows must keep reading, so a key is never renamed or
// dropped here (TestStoredJSONColumnsKeepTheirKeys pins them).
type (
	targetingDoc struct {
		Platforms      []string `json:"platforms"`
		MinAppVersion  string   `json:"min_app_version"`
		MaxAppVersion  string   `json:"max_app_version"`
		Regions        []string `json:"regions"`
		Langs          []string `json:"langs"`
		RolloutPercent int      `json:"rollout_percent"`
		UIDs           []string `json:"uids"`
	}
	content struct {
		Title    string          `json:"title"`
		Content  string          `json:"content"`
		ImageURL string          `json:"image_url"`
		LinkURL  string          `json:"link_url"`
		Buttons  []buttonDoc     `json:"buttons"`
		Ext      json.RawMessage `json:"ext"`
	}
	buttonDoc struct {
		Text    string `json:"text"`
		LinkURL string `json:"link_url"`
	}
)

func toTargetingDoc(t popup.Targeting) targetingDoc {
	return targetingDoc{Platforms: t.Platforms, MinAppVersion: t.MinAppVersion, MaxAppVersion: t.MaxAppVersion,
		Regions: t.Regions, Langs: t.Langs, RolloutPercent: t.RolloutPercent, UIDs: t.UIDs}
}

func fromTargetingDoc(d targetingDoc) popup.Targeting {
	return popup.Targeting{Platforms: d.Platforms, MinAppVersion: d.MinAppVersion, MaxAppVersion: d.MaxAppVersion,
		Regions: d.Regions, Langs: d.Langs, RolloutPercent: d.RolloutPercent, UIDs: d.UIDs}
}

// toContent is p's content column; buttons keep their nil-ness (null stays null, [] stays []).
func toContent(p popup.Popup) content {
	var buttons []buttonDoc
	if p.Buttons != nil {
		buttons = make([]buttonDoc, len(p.Buttons))
		for i, b := range p.Buttons {
			buttons[i] = buttonDoc{Text: b.Text, LinkURL: b.LinkURL}
		}
	}
	return content{Title: p.Title, Content: p.Content, ImageURL: p.ImageURL, LinkURL: p.LinkURL, Buttons: buttons, Ext: p.Ext}
}

// fromContent fills p's content fields from its content column; missing buttons read as none and
// a missing ext as {}.
func fromContent(p *popup.Popup, c content) {
	p.Title, p.Content, p.ImageURL, p.LinkURL, p.Ext = c.Title, c.Content, c.ImageURL, c.LinkURL, c.Ext
	p.Buttons = make([]popup.Button, len(c.Buttons))
	for i, b := range c.Buttons {
		p.Buttons[i] = popup.Button{Text: b.Text, LinkURL: b.LinkURL}
	}
	if len(p.Ext) == 0 {
		p.Ext = json.RawMessage(`{}`)
	}
}

// configCols are the popup_config columns a write sets from a popup, in the order of
// configValues: the one list every statement below is built from.
var configCols = []string{"name", "bucket_seed", "status", "priority", "start_at", "end_at", "reshow_after_seconds",
	"click_cooldown_seconds", "close_cooldown_seconds", "max_impressions", "targeting", "content"}

var (
	// configColumns is configCols for an INSERT's column list.
	configColumns = strings.Join(configCols, ", ")
	// popupColumns is what scanPopup reads: the id, configCols, then the columns the database keeps.
	popupColumns = "id, " + configColumns + ", created_at, updated_at, revision"
	// configAssignments sets configCols from configValues' placeholders (an UPDATE).
	configAssignments = joinEach(configCols, " = ?")
	// configUpserts takes every column but the name (an import matches popups by name) from the
	// inserted row (INSERT ... ON DUPLICATE KEY UPDATE).
	configUpserts = joinEach(configCols[1:], " = VALUES(%s)")
)

// joinEach joins "col" + suffix for each column; a %s in suffix is the column again.
func joinEach(cols []string, suffix string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c + strings.ReplaceAll(suffix, "%s", c)
	}
	return strings.Join(parts, ", ")
}

type scanner interface{ Scan(dest ...any) error }

func scanPopup(s scanner) (popup.Popup, error) {
	var (
		p               popup.Popup
		start, end      sql.NullTime
		status          string
		targeting, body []byte
	)
	err := s.Scan(&p.ID, &p.Name, &p.BucketSeed, &status, &p.Priority, &start, &end, &p.ReshowAfterSeconds,
		&p.ClickCooldownSeconds, &p.CloseCooldownSeconds, &p.MaxImpressions, &targeting, &body, &p.CreatedAt, &p.UpdatedAt, &p.Revision)
	if err != nil {
		return popup.Popup{}, err
	}
	p.Status = popup.Status(status)
	p.BucketSeed = p.RolloutSeed() // '' (a row written by hand) is the decimal id
	if err := fillParts(&p, start, end, targeting, body); err != nil {
		return popup.Popup{}, err
	}
	return p, nil
}

// fillParts completes a popup read from its row (or a revision's copy of the row): the window
// times and the decoded targeting and content.
func fillParts(p *popup.Popup, start, end sql.NullTime, targeting, body []byte) error {
	if start.Valid {
		t := start.Time.UTC()
		p.StartAt = &t
	}
	if end.Valid {
		t := end.Time.UTC()
		p.EndAt = &t
	}
	var t targetingDoc
	if err := json.Unmarshal(targeting, &t); err != nil {
		return fmt.Errorf("popup %d targeting: %w", p.ID, err)
	}
	p.Targeting = fromTargetingDoc(t)
	var c content
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("popup %d content: %w", p.ID, err)
	}
	fromContent(p, c)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return nil
}

// configValues is p as the values of configCols, in that order.
func configValues(p popup.Popup) ([]any, error) {
	targeting, body, err := encodeParts(p)
	if err != nil {
		return nil, err
	}
	return []any{p.Name, p.BucketSeed, string(p.Status), p.Priority, nullTime(p.StartAt), nullTime(p.EndAt), p.ReshowAfterSeconds,
		p.ClickCooldownSeconds, p.CloseCooldownSeconds, p.MaxImpressions, targeting, body}, nil
}

func encodeParts(p popup.Popup) (targeting, body []byte, err error) {
	if targeting, err = json.Marshal(toTargetingDoc(p.Targeting)); err != nil {
		return nil, nil, err
	}
	body, err = json.Marshal(toContent(p))
	return targeting, body, err
}

func nullTime(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	// DATETIME(3) keeps milliseconds; truncating here (MySQL would round) keeps what an import
	// compares equal to what is stored.
	return sql.NullTime{Time: t.UTC().Truncate(time.Millisecond), Valid: true}
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
	defer tx.Rollback() // read-only
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
	return get(ctx, r.db, id)
}

// get reads one popup through q: the database, or a write's transaction so that the popup a
// write returns is the one it wrote (with its revision), not a later writer's.
func get(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int64) (popup.Popup, error) {
	p, err := scanPopup(q.QueryRowContext(ctx, `SELECT `+popupColumns+` FROM popup_config WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Popup{}, fmt.Errorf("popup %d: %w", id, popup.ErrNotFound)
	}
	return p, err
}

// Create stores a new popup at revision 1 and returns it with its id; actor is recorded as its
// author in the popup's history and the audit log, in the same transaction. Every write checks
// the actor's role against the rights rule (popup.Write.Needs) before it writes anything, and
// fails with a *popup.ForbiddenError when the role does not allow it.
func (r *PopupRepo) Create(ctx context.Context, actor popup.Actor, p popup.Popup) (popup.Popup, error) {
	if err := actor.May(popup.Write{Action: popup.ActionCreate, After: p.Status}); err != nil {
		return popup.Popup{}, fmt.Errorf("create popup: %w", err)
	}
	p.GiveBucketSeed()
	values, err := configValues(p)
	if err != nil {
		return popup.Popup{}, err
	}
	var stored popup.Popup
	err = r.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, `INSERT INTO popup_config (`+configColumns+`) VALUES `+
			placeholders(1, len(values)), values...)
		if err != nil {
			return false, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return false, err
		}
		if stored, err = get(ctx, tx, id); err != nil {
			return false, err
		}
		return true, record(ctx, tx, []change{{actor: actor, action: popup.ActionCreate, after: stored}})
	})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("create popup: %w", err)
	}
	return stored, nil
}

// Update replaces popup id with p and increments its revision. p without a bucket seed keeps the
// stored one; another seed is popup.ErrBucketSeedChanged. With ifRevision non-nil, the write
// happens only while the popup's revision is one of ifRevision, checked by the UPDATE itself, so
// of two writers who read the same revision exactly one wins; the other gets
// popup.ErrRevisionMismatch. A nil ifRevision writes unconditionally. When p equals the stored
// popup nothing is written (no revision, audit entry or config version): changed is false and the
// stored popup is returned as it is. The role check reads the stored status from the row it locks
// (replace), so an editor's edit of a draft cannot become a change of a live popup that another
// writer published meanwhile; it comes before the no-op shortcut, so a save that would change
// nothing is still refused to a role that may not make it.
func (r *PopupRepo) Update(ctx context.Context, actor popup.Actor, id int64, p popup.Popup, ifRevision []int64) (stored popup.Popup, changed bool, err error) {
	err = r.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		stored, changed, err = replace(ctx, tx, actor, popup.ActionUpdate, id, p, ifRevision)
		return changed, err
	})
	if err != nil {
		return popup.Popup{}, false, fmt.Errorf("update popup %d: %w", id, err)
	}
	return stored, changed, nil
}

// replace is the write of an update or a rollback, inside tx: it locks the popup, checks the
// actor's role against the stored and the new status, then the If-Match condition and the bucket
// seed, and writes p over it and records the change unless p equals what is stored (changed
// false: nothing written). The role comes first, as in Archive (whose revision condition is in
// its UPDATE): a role that may not make the write gets a 403 whatever the revision or content.
func replace(ctx context.Context, tx *sql.Tx, actor popup.Actor, action popup.Action, id int64, p popup.Popup, ifRevision []int64) (stored popup.Popup, changed bool, err error) {
	before, err := getForUpdate(ctx, tx, id)
	if err != nil {
		return popup.Popup{}, false, err
	}
	if err := actor.May(popup.Write{Action: action, Before: before.Status, After: p.Status}); err != nil {
		return popup.Popup{}, false, err
	}
	if ifRevision != nil && !slices.Contains(ifRevision, before.Revision) {
		return popup.Popup{}, false, popup.ErrRevisionMismatch
	}
	if err := p.KeepBucketSeed(before); err != nil {
		return popup.Popup{}, false, err
	}
	if sameContent(before, p) {
		return before, false, nil
	}
	values, err := configValues(p)
	if err != nil {
		return popup.Popup{}, false, err
	}
	// The row is locked and its revision checked above; the condition stays in the UPDATE so that
	// the write is conditional by itself, whatever runs before it.
	cond, condArgs := revisionCond(ifRevision)
	args := append(append(values, id), condArgs...)
	res, err := tx.ExecContext(ctx, `UPDATE popup_config SET `+configAssignments+`,
		updated_at = CURRENT_TIMESTAMP(3), revision = revision + 1 WHERE id = ?`+cond, args...)
	if err != nil {
		return popup.Popup{}, false, err
	}
	if err := mustHaveWritten(ctx, tx, res, id); err != nil {
		return popup.Popup{}, false, err
	}
	if stored, err = get(ctx, tx, id); err != nil {
		return popup.Popup{}, false, err
	}
	return stored, true, record(ctx, tx, []change{{actor: actor, action: action, before: &before, after: stored}})
}

// Archive sets a popup's status to archived (DELETE in the admin API: rows are never removed,
// the action log refers to them) and increments its revision; ifRevision as in Update.
func (r *PopupRepo) Archive(ctx context.Context, actor popup.Actor, id int64, ifRevision []int64) (popup.Popup, error) {
	cond, condArgs := revisionCond(ifRevision)
	var stored popup.Popup
	err := r.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		before, err := getForUpdate(ctx, tx, id)
		if err != nil {
			return false, err
		}
		if err := actor.May(popup.Write{Action: popup.ActionArchive, Before: before.Status}); err != nil {
			return false, err
		}
		res, err := tx.ExecContext(ctx, `UPDATE popup_config SET status = 'archived', updated_at = CURRENT_TIMESTAMP(3),
			revision = revision + 1 WHERE id = ?`+cond, append([]any{id}, condArgs...)...)
		if err != nil {
			return false, err
		}
		if err := mustHaveWritten(ctx, tx, res, id); err != nil {
			return false, err
		}
		if stored, err = get(ctx, tx, id); err != nil {
			return false, err
		}
		return true, record(ctx, tx, []change{{actor: actor, action: popup.ActionArchive, before: &before, after: stored}})
	})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("archive popup %d: %w", id, err)
	}
	return stored, nil
}

// revisionCond is the WHERE clause of a conditional write: nil = none, an empty list = nothing
// can match.
func revisionCond(ifRevision []int64) (string, []any) {
	switch {
	case ifRevision == nil:
		return "", nil
	case len(ifRevision) == 0:
		return " AND FALSE", nil
	}
	var b strings.Builder
	b.WriteString(" AND revision IN (")
	args := make([]any, len(ifRevision))
	for i, rev := range ifRevision {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
		args[i] = rev
	}
	b.WriteByte(')')
	return b.String(), args
}

// mustHaveWritten explains an UPDATE that changed no row (every write increments the revision,
// so a matched row always changes): the popup does not exist (ErrNotFound) or is at another
// revision than the condition asked for (ErrRevisionMismatch).
func mustHaveWritten(ctx context.Context, tx *sql.Tx, res sql.Result, id int64) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM popup_config WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return popup.ErrNotFound
	} else if err != nil {
		return err
	}
	return popup.ErrRevisionMismatch
}

// inTx runs fn and, when fn reports that it changed something, bumps the config version in the
// same transaction. A write that would give two live popups one name fails with popup.ErrNameTaken.
func (r *PopupRepo) inTx(ctx context.Context, fn func(*sql.Tx) (changed bool, err error)) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit it is a no-op
	changed, err := fn(tx)
	if err != nil {
		return nameTaken(err)
	}
	if !changed {
		return nil // nothing written: the rollback releases the row lock
	}
	if err := bumpVersion(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

func bumpVersion(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE popup_config_version SET version = version + 1, updated_at = CURRENT_TIMESTAMP(3) WHERE id = 1`)
	return err
}
