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
type PopupRepo struct {
	db *sql.DB
	// Now is the clock of the experiment transitions and phases (when a phase starts); time.Now
	// unless set (a server's own clock, a test's fixed one).
	Now func() time.Time
}

// NewPopupRepo returns a repository over db.
func NewPopupRepo(db *sql.DB) *PopupRepo { return &PopupRepo{db: db, Now: time.Now} }

// The JSON held in popup_config.targeting, popup_config.content and popup_config.experiment (and,
// copied verbatim, in the revision and audit documents, including those migration 00004 wrote).
// A variant's content has the content column's keys. These are storage
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
	experimentDoc struct {
		Status           string       `json:"status"`
		CoveragePercent  int          `json:"coverage_percent"`
		Variants         []variantDoc `json:"variants"`
		Control          *controlDoc  `json:"control"`
		PlannedEndAt     *time.Time   `json:"planned_end_at"`
		Phase            int          `json:"phase"`
		Salt             string       `json:"salt"`
		PhaseStartedAt   *time.Time   `json:"phase_started_at"`
		ConcludedVariant string       `json:"concluded_variant"`
	}
	variantDoc struct {
		Key    string `json:"key"`
		Weight int    `json:"weight"`
		content
	}
	controlDoc struct {
		Weight int    `json:"weight"`
		Mode   string `json:"mode"`
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

// toContent is a creative (a popup's own, in its content column, or a variant's) as stored;
// buttons keep their nil-ness (null stays null, [] stays []).
func toContent(c popup.Creative) content {
	var buttons []buttonDoc
	if c.Buttons != nil {
		buttons = make([]buttonDoc, len(c.Buttons))
		for i, b := range c.Buttons {
			buttons[i] = buttonDoc{Text: b.Text, LinkURL: b.LinkURL}
		}
	}
	return content{Title: c.Title, Content: c.Content, ImageURL: c.ImageURL, LinkURL: c.LinkURL, Buttons: buttons, Ext: c.Ext}
}

// fromContent is a stored creative; missing buttons read as none and a missing ext as {}.
func fromContent(c content) popup.Creative {
	out := popup.Creative{Title: c.Title, Content: c.Content, ImageURL: c.ImageURL, LinkURL: c.LinkURL, Ext: c.Ext,
		Buttons: make([]popup.Button, len(c.Buttons))}
	for i, b := range c.Buttons {
		out.Buttons[i] = popup.Button{Text: b.Text, LinkURL: b.LinkURL}
	}
	if len(out.Ext) == 0 {
		out.Ext = json.RawMessage(`{}`)
	}
	return out
}

// toExperimentDoc is e as its column holds it; nil (no experiment) is NULL.
func toExperimentDoc(e *popup.Experiment) *experimentDoc {
	if e == nil {
		return nil
	}
	d := &experimentDoc{Status: string(e.Status), CoveragePercent: e.CoveragePercent, Variants: make([]variantDoc, len(e.Variants)),
		PlannedEndAt: e.PlannedEndAt, Phase: e.Phase, Salt: e.Salt, PhaseStartedAt: e.PhaseStartedAt, ConcludedVariant: e.ConcludedVariant}
	for i, v := range e.Variants {
		d.Variants[i] = variantDoc{Key: v.Key, Weight: v.Weight, content: toContent(v.Creative)}
	}
	if c := e.Control; c != nil {
		d.Control = &controlDoc{Weight: c.Weight, Mode: string(c.Mode)}
	}
	return d
}

// fromExperimentDoc is a stored experiment; its times read in UTC.
func fromExperimentDoc(d *experimentDoc) *popup.Experiment {
	if d == nil {
		return nil
	}
	e := &popup.Experiment{Status: popup.ExperimentStatus(d.Status), CoveragePercent: d.CoveragePercent,
		Variants: make([]popup.Variant, len(d.Variants)), PlannedEndAt: popup.UTCPtr(d.PlannedEndAt), Phase: d.Phase, Salt: d.Salt,
		PhaseStartedAt: popup.UTCPtr(d.PhaseStartedAt), ConcludedVariant: d.ConcludedVariant}
	for i, v := range d.Variants {
		e.Variants[i] = popup.Variant{Key: v.Key, Weight: v.Weight, Creative: fromContent(v.content)}
	}
	if c := d.Control; c != nil {
		e.Control = &popup.Control{Weight: c.Weight, Mode: popup.ControlMode(c.Mode)}
	}
	return e
}

// configCols are the popup_config columns a write sets from a popup, in the order of
// configValues: the one list every statement below is built from.
var configCols = []string{"name", "bucket_seed", "status", "priority", "start_at", "end_at", "reshow_after_seconds",
	"click_cooldown_seconds", "close_cooldown_seconds", "max_impressions", "targeting", "content", "experiment"}

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
		&p.ClickCooldownSeconds, &p.CloseCooldownSeconds, &p.MaxImpressions, &targeting, &body, &experiment,
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
	var t targetingDoc
	if err := json.Unmarshal(targeting, &t); err != nil {
		return fmt.Errorf("popup %d targeting: %w", p.ID, err)
	}
	p.Targeting = fromTargetingDoc(t)
	var c content
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("popup %d content: %w", p.ID, err)
	}
	p.SetCreative(fromContent(c))
	var e *experimentDoc
	if len(experiment) > 0 {
		if err := json.Unmarshal(experiment, &e); err != nil {
			return fmt.Errorf("popup %d experiment: %w", p.ID, err)
		}
	}
	p.Experiment = fromExperimentDoc(e)
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
		p.ClickCooldownSeconds, p.CloseCooldownSeconds, p.MaxImpressions, targeting, body, experiment}, nil
}

// encodeParts is p's JSON columns; experiment is nil (NULL) when p has none.
func encodeParts(p popup.Popup) (targeting, body, experiment []byte, err error) {
	if targeting, err = json.Marshal(toTargetingDoc(p.Targeting)); err != nil {
		return nil, nil, nil, err
	}
	if body, err = json.Marshal(toContent(p.Creative())); err != nil {
		return nil, nil, nil, err
	}
	if p.Experiment != nil {
		experiment, err = json.Marshal(toExperimentDoc(p.Experiment))
	}
	return targeting, body, experiment, err
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

// ListWithExperiments returns the non-archived popups that have an experiment, by id: what the
// worker's sample-ratio monitor reads every minute, rather than every popup.
func (r *PopupRepo) ListWithExperiments(ctx context.Context) ([]popup.Popup, error) {
	return r.query(ctx, r.db, `SELECT `+popupColumns+` FROM popup_config WHERE status <> 'archived' AND experiment IS NOT NULL ORDER BY id`)
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
	if _, err := keepExperiment(&p, popup.Popup{}, false, r.Now()); err != nil { // a new experiment: a draft at phase 1
		return popup.Popup{}, fmt.Errorf("create popup: %w", err)
	}
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
// stored one; another seed is popup.ErrBucketSeedChanged. p's experiment follows the phase rules
// against the stored one (popup.KeepExperiment, opts.AcceptReassignment): its server-managed
// fields are the stored ones, a change of its arms starts a new phase or, accepted, is audited as
// a reassign; removing a running experiment is popup.ErrExperimentRunning and changing a
// concluded one popup.ErrExperimentConcluded. With opts.IfRevision non-nil, the write happens only
// while the popup's revision is one of opts.IfRevision, checked by the UPDATE itself, so of two
// writers who read the same revision exactly one wins; the other gets popup.ErrRevisionMismatch.
// A nil IfRevision writes unconditionally. When p equals the stored popup nothing is written (no
// revision, audit entry or config version): changed is false and the stored popup is returned as
// it is. The role check reads the stored status from the row it locks (replace), so an editor's
// edit of a draft cannot become a change of a live popup that another writer published meanwhile;
// it comes before the no-op shortcut, so a save that would change nothing is still refused to a
// role that may not make it.
func (r *PopupRepo) Update(ctx context.Context, actor popup.Actor, id int64, p popup.Popup, opts popup.UpdateOptions) (stored popup.Popup, changed bool, err error) {
	err = r.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		stored, changed, err = replace(ctx, tx, actor, popup.ActionUpdate, id, p, opts, r.Now())
		return changed, err
	})
	if err != nil {
		return popup.Popup{}, false, fmt.Errorf("update popup %d: %w", id, err)
	}
	return stored, changed, nil
}

// replace is the write of an update or a rollback, inside tx: it locks the popup, checks the
// actor's role against the stored and the new status, then the If-Match condition, the bucket
// seed and the experiment's phase rules (at now), and writes p over it and records the change
// unless p equals what is stored (changed false: nothing written). The role comes first, as in
// Archive (whose revision condition is in its UPDATE): a role that may not make the write gets a
// 403 whatever the revision or content.
func replace(ctx context.Context, tx *sql.Tx, actor popup.Actor, action popup.Action, id int64, p popup.Popup, opts popup.UpdateOptions, now time.Time) (stored popup.Popup, changed bool, err error) {
	before, err := getForUpdate(ctx, tx, id)
	if err != nil {
		return popup.Popup{}, false, err
	}
	if err := actor.May(popup.Write{Action: action, Before: before.Status, After: p.Status}); err != nil {
		return popup.Popup{}, false, err
	}
	if opts.IfRevision != nil && !slices.Contains(opts.IfRevision, before.Revision) {
		return popup.Popup{}, false, popup.ErrRevisionMismatch
	}
	if err := p.KeepBucketSeed(before); err != nil {
		return popup.Popup{}, false, err
	}
	reassigned, err := keepExperiment(&p, before, opts.AcceptReassignment, now)
	if err != nil {
		return popup.Popup{}, false, err
	}
	if sameContent(before, p) {
		return before, false, nil
	}
	if reassigned {
		action = popup.ActionReassign
	}
	stored, err = overwrite(ctx, tx, actor, action, before, p, opts.IfRevision)
	return stored, err == nil, err
}

// keepExperiment applies popup.KeepExperiment to a copy of p's experiment (p may share it with
// the caller), against stored's.
func keepExperiment(p *popup.Popup, stored popup.Popup, acceptReassignment bool, now time.Time) (reassigned bool, err error) {
	if p.Experiment != nil {
		e := *p.Experiment
		p.Experiment = &e
	}
	return popup.KeepExperiment(p.Experiment, stored.Experiment, acceptReassignment, now)
}

// overwrite writes p over before, the popup's row locked by tx, increments its revision and
// records the change as action. The revision condition (nil: none) stays in the UPDATE so that
// the write is conditional by itself, whatever checked it before.
func overwrite(ctx context.Context, tx *sql.Tx, actor popup.Actor, action popup.Action, before, p popup.Popup, ifRevision []int64) (popup.Popup, error) {
	values, err := configValues(p)
	if err != nil {
		return popup.Popup{}, err
	}
	cond, condArgs := revisionCond(ifRevision)
	args := append(append(values, before.ID), condArgs...)
	res, err := tx.ExecContext(ctx, `UPDATE popup_config SET `+configAssignments+`,
		updated_at = CURRENT_TIMESTAMP(3), revision = revision + 1 WHERE id = ?`+cond, args...)
	if err != nil {
		return popup.Popup{}, err
	}
	if err := mustHaveWritten(ctx, tx, res, before.ID); err != nil {
		return popup.Popup{}, err
	}
	stored, err := get(ctx, tx, before.ID)
	if err != nil {
		return popup.Popup{}, err
	}
	return stored, record(ctx, tx, []change{{actor: actor, action: action, before: &before, after: stored}})
}

// Transition makes an experiment transition (start, stop, conclude) of popup id at the
// repository's clock, in one transaction with the row locked: the role the transition needs
// (popup.Write.Needs: an update's, for the stored status) is checked first, then ifRevision (as
// in Update), then the transition itself (popup.ExperimentTransition.Apply, whose errors it
// returns). It writes a revision and an audit entry of the transition's action and bumps the
// config version.
func (r *PopupRepo) Transition(ctx context.Context, actor popup.Actor, id int64, t popup.ExperimentTransition, ifRevision []int64) (popup.Popup, error) {
	var stored popup.Popup
	err := r.inTx(ctx, func(tx *sql.Tx) (bool, error) {
		before, err := getForUpdate(ctx, tx, id)
		if err != nil {
			return false, err
		}
		if err := actor.May(popup.Write{Action: t.Action, Before: before.Status}); err != nil {
			return false, err
		}
		if ifRevision != nil && !slices.Contains(ifRevision, before.Revision) {
			return false, popup.ErrRevisionMismatch
		}
		p := before
		if before.Experiment != nil {
			e := *before.Experiment
			p.Experiment = &e
		}
		if err := t.Apply(&p, r.Now()); err != nil {
			return false, err
		}
		stored, err = overwrite(ctx, tx, actor, t.Action, before, p, ifRevision)
		return err == nil, err
	})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("%s of popup %d: %w", t.Action, id, err)
	}
	return stored, nil
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
