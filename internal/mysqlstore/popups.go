package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"popupsvc/internal/popup"
	"popupsvc/internal/popupdoc"
)

// PopupRepo is the source of truth for popup configs: its reads, and the transaction (InTx, Tx)
// in which the write use case (internal/manage) writes a popup, its revision and audit entry and
// bumps the config version, so that a reader of (version, popups) never sees one without the
// other.
type PopupRepo struct{ db *sql.DB }

// NewPopupRepo returns a repository over db.
func NewPopupRepo(db *sql.DB) *PopupRepo { return &PopupRepo{db: db} }

// configCols are the popup_config columns a write sets from a popup, in the order of
// configValues: the one list every statement below is built from.
var configCols = []string{"name", "bucket_seed", "status", "priority", "start_at", "end_at", "reshow_after_seconds",
	"click_cooldown_seconds", "close_cooldown_seconds", "max_impressions", "exempt_from_caps", "holdout_exempt", "targeting", "content", "experiment"}

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
		experiment      []byte // NULL: none
	)
	err := s.Scan(&p.ID, &p.Name, &p.BucketSeed, &status, &p.Priority, &start, &end, &p.ReshowAfterSeconds,
		&p.ClickCooldownSeconds, &p.CloseCooldownSeconds, &p.MaxImpressions, &p.ExemptFromCaps, &p.HoldoutExempt, &targeting, &body, &experiment,
		&p.CreatedAt, &p.UpdatedAt, &p.Revision)
	if err != nil {
		return popup.Popup{}, err
	}
	p.Status = popup.Status(status)
	p.BucketSeed = p.RolloutSeed() // '' (a row written by hand) is the decimal id
	if err := fillParts(&p, start, end, targeting, body, experiment); err != nil {
		return popup.Popup{}, err
	}
	return p, nil
}

// fillParts completes a popup read from its row (or a revision's copy of the row): the window
// times and the decoded targeting, content and experiment (nil or JSON null: none).
func fillParts(p *popup.Popup, start, end sql.NullTime, targeting, body, experiment []byte) error {
	if start.Valid {
		t := start.Time.UTC()
		p.StartAt = &t
	}
	if end.Valid {
		t := end.Time.UTC()
		p.EndAt = &t
	}
	var t popupdoc.Targeting
	if err := json.Unmarshal(targeting, &t); err != nil {
		return fmt.Errorf("popup %d targeting: %w", p.ID, err)
	}
	p.Targeting = t.Popup()
	var c popupdoc.Content
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("popup %d content: %w", p.ID, err)
	}
	p.Creative = c.Creative()
	var e *popupdoc.Experiment
	if len(experiment) > 0 {
		if err := json.Unmarshal(experiment, &e); err != nil {
			return fmt.Errorf("popup %d experiment: %w", p.ID, err)
		}
	}
	p.Experiment = e.Popup()
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return nil
}

// configValues is p as the values of configCols, in that order.
func configValues(p popup.Popup) ([]any, error) {
	targeting, body, experiment, err := encodeParts(p)
	if err != nil {
		return nil, err
	}
	return []any{p.Name, p.BucketSeed, string(p.Status), p.Priority, nullTime(p.StartAt), nullTime(p.EndAt), p.ReshowAfterSeconds,
		p.ClickCooldownSeconds, p.CloseCooldownSeconds, p.MaxImpressions, p.ExemptFromCaps, p.HoldoutExempt, targeting, body, experiment}, nil
}

// encodeParts is p's JSON columns (internal/popupdoc's parts); experiment is nil (NULL) when p
// has none.
func encodeParts(p popup.Popup) (targeting, body, experiment []byte, err error) {
	if targeting, err = json.Marshal(popupdoc.TargetingOf(p.Targeting)); err != nil {
		return nil, nil, nil, err
	}
	if body, err = json.Marshal(popupdoc.ContentOf(p.Creative)); err != nil {
		return nil, nil, nil, err
	}
	if p.Experiment != nil {
		experiment, err = json.Marshal(popupdoc.ExperimentOf(p.Experiment))
	}
	return targeting, body, experiment, err
}

func nullTime(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	// DATETIME(3) keeps milliseconds; truncating here (MySQL would round) stores what a write's
	// no-change check (internal/manage, which truncates alike) compares equal to what is stored.
	return sql.NullTime{Time: t.UTC().Truncate(time.Millisecond), Valid: true}
}

// List returns the popups ordered by id; archived ones only when asked.
func (r *PopupRepo) List(ctx context.Context, includeArchived bool) ([]popup.Popup, error) {
	q := `SELECT ` + popupColumns + ` FROM popup_config`
	if !includeArchived {
		q += ` WHERE status <> 'archived'`
	}
	return queryPopups(ctx, r.db, q+` ORDER BY id`)
}

// ListWithExperiments returns the non-archived popups that have an experiment, by id: what the
// worker's sample-ratio monitor reads every minute, rather than every popup.
func (r *PopupRepo) ListWithExperiments(ctx context.Context) ([]popup.Popup, error) {
	return queryPopups(ctx, r.db, `SELECT `+popupColumns+` FROM popup_config WHERE status <> 'archived' AND experiment IS NOT NULL ORDER BY id`)
}

func queryPopups(ctx context.Context, q interface {
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

// Snapshot reads the version, every non-archived popup and the team settings (the pacing, the
// running holdout phase) in one consistent read.
func (r *PopupRepo) Snapshot(ctx context.Context) (version int64, popups []popup.Popup, team popup.Team, err error) {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return 0, nil, team, fmt.Errorf("snapshot: %w", err)
	}
	defer tx.Rollback() // read-only
	if err := tx.QueryRowContext(ctx, `SELECT version FROM popup_config_version WHERE id = 1`).Scan(&version); err != nil {
		return 0, nil, team, fmt.Errorf("snapshot version: %w", err)
	}
	popups, err = queryPopups(ctx, tx, `SELECT `+popupColumns+` FROM popup_config WHERE status <> 'archived' ORDER BY id`)
	if err != nil {
		return 0, nil, team, err
	}
	if team.Pacing, err = readPacing(ctx, tx); err != nil {
		return 0, nil, team, err
	}
	if team.Holdout, err = readHoldout(ctx, tx, ""); err != nil {
		return 0, nil, team, err
	}
	if !team.Holdout.Running() {
		team.Holdout = popup.Holdout{}
	}
	return version, popups, team, tx.Commit()
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

// Tx is a popup write's transaction, as the write use case (manage.Tx) reads and writes it:
// persistence only. The rules of a write (roles, If-Match, bucket seeds, experiment phases, what
// counts as no change) are internal/manage's; the one kept here is the revision condition in an
// overwrite's UPDATE, so that a conditional write is safe by itself.
type Tx struct{ tx *sql.Tx }

// InTx runs fn in one transaction, committed when fn returns nil.
func (r *PopupRepo) InTx(ctx context.Context, fn func(*Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit it is a no-op
	if err := fn(&Tx{tx: tx}); err != nil {
		return err
	}
	return tx.Commit()
}

// GetForUpdate reads popup id and locks its row until the transaction ends.
func (t *Tx) GetForUpdate(ctx context.Context, id int64) (popup.Popup, error) {
	return getForUpdate(ctx, t.tx, id)
}

// LockByName reads the live popup of each name, as the unique index of live names matches it
// (nameKey), or nil. It locks every live popup, so that what an import counts stays true until
// it commits.
func (t *Tx) LockByName(ctx context.Context, names []string) ([]*popup.Popup, error) {
	live, err := queryPopups(ctx, t.tx, `SELECT `+popupColumns+` FROM popup_config WHERE status <> 'archived' FOR UPDATE`)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*popup.Popup, len(live))
	for i := range live {
		byName[nameKey(live[i].Name)] = &live[i]
	}
	out := make([]*popup.Popup, len(names))
	for i, name := range names {
		out[i] = byName[nameKey(name)]
	}
	return out, nil
}

// Revision reads popup id as its revision rev left it (popup_revision).
func (t *Tx) Revision(ctx context.Context, id, rev int64) (popup.Popup, error) {
	var raw []byte
	err := t.tx.QueryRowContext(ctx, `SELECT popup FROM popup_revision WHERE popup_id = ? AND revision = ?`, id, rev).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Popup{}, popup.ErrRevisionNotKept
	}
	if err != nil {
		return popup.Popup{}, err
	}
	return decodeDoc(raw)
}

// Insert stores ps at revision 1 and reads them back. One popup (a create) is read back by its
// new id; several (an import, whose popups are live and have distinct names) are written in
// multi-row INSERTs and read back by name.
func (t *Tx) Insert(ctx context.Context, ps []popup.Popup) ([]popup.Popup, error) {
	if len(ps) != 1 {
		if err := importWrite(ctx, t.tx, ps, false); err != nil {
			return nil, nameTaken(err)
		}
		return t.readBack(ctx, ps, true)
	}
	values, err := configValues(ps[0])
	if err != nil {
		return nil, err
	}
	res, err := t.tx.ExecContext(ctx, `INSERT INTO popup_config (`+configColumns+`) VALUES `+placeholders(1, len(values)), values...)
	if err != nil {
		return nil, nameTaken(err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	stored, err := get(ctx, t.tx, id)
	return []popup.Popup{stored}, err
}

// Overwrite writes each popup of ps over the row of its id, increments its revision and reads
// it back. One popup is one UPDATE whose WHERE keeps the revision condition (ifRevision, nil:
// none); several (an import's, unconditional, their rows locked) are written in multi-row
// upserts and read back by id.
func (t *Tx) Overwrite(ctx context.Context, ps []popup.Popup, ifRevision []int64) ([]popup.Popup, error) {
	if len(ps) != 1 {
		if ifRevision != nil {
			return nil, errors.New("a conditional overwrite is of one popup")
		}
		if err := importWrite(ctx, t.tx, ps, true); err != nil {
			return nil, nameTaken(err)
		}
		return t.readBack(ctx, ps, false)
	}
	p := ps[0]
	values, err := configValues(p)
	if err != nil {
		return nil, err
	}
	cond, condArgs := revisionCond(ifRevision)
	args := append(append(values, p.ID), condArgs...)
	res, err := t.tx.ExecContext(ctx, `UPDATE popup_config SET `+configAssignments+`,
		updated_at = CURRENT_TIMESTAMP(3), revision = revision + 1 WHERE id = ?`+cond, args...)
	if err != nil {
		return nil, nameTaken(err)
	}
	if err := mustHaveWritten(ctx, t.tx, res, p.ID); err != nil {
		return nil, err
	}
	stored, err := get(ctx, t.tx, p.ID)
	return []popup.Popup{stored}, err
}

// readBack reads ps as stored, in their order: by (live) name after an insert, whose ids are
// the store's, by id after an overwrite.
func (t *Tx) readBack(ctx context.Context, ps []popup.Popup, byName bool) ([]popup.Popup, error) {
	key := func(p popup.Popup) string { return strconv.FormatInt(p.ID, 10) }
	if byName {
		key = func(p popup.Popup) string { return nameKey(p.Name) }
	}
	out := make([]popup.Popup, len(ps))
	for start := 0; start < len(ps); start += importBatch {
		batch := ps[start:min(start+importBatch, len(ps))]
		args := make([]any, len(batch))
		for i, p := range batch {
			args[i] = p.ID
			if byName {
				args[i] = p.Name
			}
		}
		where := `id IN (`
		if byName {
			where = `status <> 'archived' AND name IN (`
		}
		stored, err := queryPopups(ctx, t.tx, `SELECT `+popupColumns+` FROM popup_config WHERE `+where+placeholders(1, len(batch))[1:], args...)
		if err != nil {
			return nil, err
		}
		found := make(map[string]popup.Popup, len(stored))
		for _, p := range stored {
			found[key(p)] = p
		}
		for i, p := range batch {
			s, ok := found[key(p)]
			if !ok {
				return nil, fmt.Errorf("popup %q: %w", p.Name, popup.ErrNotFound)
			}
			out[start+i] = s
		}
	}
	return out, nil
}

// Record writes each change's revision row and audit row.
func (t *Tx) Record(ctx context.Context, changes []popup.Change) error {
	return record(ctx, t.tx, changes)
}

// BumpVersion increments the config version.
func (t *Tx) BumpVersion(ctx context.Context) error { return bumpVersion(ctx, t.tx) }

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

func bumpVersion(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE popup_config_version SET version = version + 1, updated_at = CURRENT_TIMESTAMP(3) WHERE id = 1`)
	return err
}
