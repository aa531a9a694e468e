package mysqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"popupsvc/internal/changelog"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
)

// PrivacyRepo stores erasures (docs/CONTRACT.md §12): the requests and their status, the
// tombstones the event writer drops erased users' events against, the deletes of a user's rows
// and the reads of a user's export. Migration 00012 says what each table holds.
type PrivacyRepo struct{ db *sql.DB }

// NewPrivacyRepo returns a repository over db.
func NewPrivacyRepo(db *sql.DB) *PrivacyRepo { return &PrivacyRepo{db: db} }

// Request records a pending erasure, or returns the pending one of the same uid hash.
func (r *PrivacyRepo) Request(ctx context.Context, q privacy.Request) (string, error) {
	var id string
	err := inTx(ctx, r.db, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT id FROM privacy_erasure WHERE uid_hash = ? AND status = ? LIMIT 1 FOR UPDATE`,
			q.UIDHash, privacy.Pending).Scan(&id)
		if err == nil { // asked again while pending: the same erasure, asked once more
			return recordPrivacy(ctx, tx, q.At, q.Actor, changelog.PrivacyErasureAsked, id, nil)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		id = q.ID
		_, err = tx.ExecContext(ctx, `INSERT INTO privacy_erasure (id, uid_hash, sealed_uid, status, requested_at, requested_by, requested_role)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, q.ID, q.UIDHash, q.Sealed, privacy.Pending, q.At, q.Actor.Name, q.Actor.Role.String())
		if err != nil {
			return err
		}
		return recordPrivacy(ctx, tx, q.At, q.Actor, changelog.PrivacyErasureAsked, id, nil)
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// Erasure reads erasure id (privacy.ErrNotFound).
func (r *PrivacyRepo) Erasure(ctx context.Context, id string) (privacy.Erasure, error) {
	var (
		e       privacy.Erasure
		status  string
		doneAt  sql.NullTime
		removed sql.NullString
	)
	err := r.db.QueryRowContext(ctx, `SELECT id, status, requested_at, done_at, removed FROM privacy_erasure WHERE id = ?`, id).
		Scan(&e.ID, &status, &e.RequestedAt, &doneAt, &removed)
	if errors.Is(err, sql.ErrNoRows) {
		return privacy.Erasure{}, privacy.ErrNotFound
	}
	if err != nil {
		return privacy.Erasure{}, fmt.Errorf("read erasure: %w", err)
	}
	e.Status, e.RequestedAt = privacy.Status(status), e.RequestedAt.UTC()
	if doneAt.Valid {
		e.DoneAt = doneAt.Time.UTC()
	}
	e.Removed = map[string]int64{}
	if removed.Valid {
		if err := json.Unmarshal([]byte(removed.String), &e.Removed); err != nil {
			return privacy.Erasure{}, fmt.Errorf("read erasure: removed: %w", err)
		}
	}
	return e, nil
}

// Pending counts the pending erasures and says when the oldest was requested (zero when none).
func (r *PrivacyRepo) Pending(ctx context.Context) (n int, oldest time.Time, err error) {
	var at sql.NullTime
	err = r.db.QueryRowContext(ctx, `SELECT COUNT(*), MIN(requested_at) FROM privacy_erasure WHERE status = ?`, privacy.Pending).Scan(&n, &at)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count pending erasures: %w", err)
	}
	if at.Valid {
		oldest = at.Time.UTC()
	}
	return n, oldest, nil
}

// Claim takes the oldest pending erasure whose lease has run out (or never had one) for owner
// until now+lease. Two workers may read the same one; the conditional update gives it to one.
func (r *PrivacyRepo) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration) (privacy.Job, bool, error) {
	var j privacy.Job
	err := r.db.QueryRowContext(ctx, `SELECT id FROM privacy_erasure
		WHERE status = ? AND (lease_until IS NULL OR lease_until < ?) ORDER BY status, requested_at LIMIT 1`, privacy.Pending, now).Scan(&j.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return privacy.Job{}, false, nil
	}
	if err != nil {
		return privacy.Job{}, false, fmt.Errorf("find pending erasure: %w", err)
	}
	res, err := r.db.ExecContext(ctx, `UPDATE privacy_erasure SET lease_owner = ?, lease_until = ?, attempts = attempts + 1
		WHERE id = ? AND status = ? AND (lease_until IS NULL OR lease_until < ?)`, owner, now.Add(lease), j.ID, privacy.Pending, now)
	if err != nil {
		return privacy.Job{}, false, fmt.Errorf("claim erasure: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return privacy.Job{}, false, nil // another worker's now
	}
	err = r.db.QueryRowContext(ctx, `SELECT uid_hash, sealed_uid FROM privacy_erasure WHERE id = ?`, j.ID).Scan(&j.UIDHash, &j.Sealed)
	if err != nil {
		return privacy.Job{}, false, fmt.Errorf("read claimed erasure: %w", err)
	}
	return j, true, nil
}

// Tombstone makes uidHash's tombstone drop every event of the uid. It first updates the barrier
// row, which waits for every batch being written (each holds it in share mode, see
// EventWriter.dropErased), so the batches committed before the tombstone are done when it
// returns, and every later one sees it.
func (r *PrivacyRepo) Tombstone(ctx context.Context, uidHash string, expires time.Time) error {
	return inTx(ctx, r.db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE privacy_barrier SET erasures = erasures + 1 WHERE id = 1`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO privacy_tombstone (uid_hash, cutoff, expires_at) VALUES (?, NULL, ?)
			ON DUPLICATE KEY UPDATE cutoff = NULL, expires_at = VALUES(expires_at)`, uidHash, expires)
		return err
	})
}

// SetCutoff lets the uid's events stamped from cutoff on be written again.
func (r *PrivacyRepo) SetCutoff(ctx context.Context, uidHash string, cutoff, expires time.Time) error {
	_, err := r.db.ExecContext(ctx, `UPDATE privacy_tombstone SET cutoff = ?, expires_at = ? WHERE uid_hash = ?`, cutoff, expires, uidHash)
	return err
}

// PurgeTombstones removes the tombstones that expired before now.
func (r *PrivacyRepo) PurgeTombstones(ctx context.Context, now time.Time) (int64, error) {
	return affected(r.db.ExecContext(ctx, `DELETE FROM privacy_tombstone WHERE expires_at < ?`, now))
}

// DeleteUserState removes uid's rows of popup_user_state.
func (r *PrivacyRepo) DeleteUserState(ctx context.Context, uid string) (int64, error) {
	return affected(r.db.ExecContext(ctx, `DELETE FROM popup_user_state WHERE uid = ?`, uid))
}

// eraseChunk bounds one delete of a user's action-log rows: short transactions, short locks.
const eraseChunk = 5000

// DeleteActions removes uid's rows of the action log, eraseChunk rows a statement (the daily and
// quarter-hour stats, which hold no uid, keep their counts). While the log of before migration
// 00015 is still being copied (LogPartitions.Backfill), its rows go first: a copy that took them
// before then has committed them to the log by the time their delete got their locks, and the
// log's delete that follows finds them.
func (r *PrivacyRepo) DeleteActions(ctx context.Context, uid string) (int64, error) {
	// A row in both (the migration copied the newest) is one row of the user's: the old table's
	// count is of the rows the log does not hold.
	var oldOnly int64
	err := r.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+tableLogUnpartitioned+` AS o WHERE o.uid = ? AND NOT EXISTS
		(SELECT 1 FROM `+TableActionLog+` AS l WHERE l.uid = o.uid AND l.event_id = o.event_id AND l.event_at = o.event_at)`, uid).Scan(&oldOnly)
	switch {
	case isNoTable(err):
		oldOnly = 0
	case err != nil:
		return 0, err
	default:
		if _, err := deleteChunks(ctx, r.db, tableLogUnpartitioned, uid); err != nil {
			return 0, err
		}
	}
	n, err := deleteChunks(ctx, r.db, TableActionLog, uid)
	if err != nil {
		return n + oldOnly, err
	}
	// The user's conversions are events of the user's too (docs/CONTRACT.md §14); a schema from
	// before migration 00017 (the migration tests erase on one) has none.
	c, err := deleteChunks(ctx, r.db, "popup_conversion_log", uid)
	if isNoTable(err) {
		err = nil
	}
	return n + oldOnly + c, err
}

// deleteChunks removes uid's rows of an action-log table, eraseChunk rows a statement.
func deleteChunks(ctx context.Context, db *sql.DB, table, uid string) (int64, error) {
	var total int64
	for {
		n, err := affected(db.ExecContext(ctx, `DELETE FROM `+table+` WHERE uid = ? LIMIT ?`, uid, eraseChunk))
		total += n
		if err != nil || n < eraseChunk {
			return total, err
		}
	}
}

// DeleteExperimentUser removes uid's rows of every experiment phase, and of every goal in them
// (the daily and per-arm counts stay).
func (r *PrivacyRepo) DeleteExperimentUser(ctx context.Context, uid string) (int64, error) {
	g, err := affected(r.db.ExecContext(ctx, `DELETE FROM popup_experiment_goal_user WHERE uid = ?`, uid))
	if err != nil && !isNoTable(err) { // (none before migration 00017)
		return g, err
	}
	n, err := affected(r.db.ExecContext(ctx, `DELETE FROM popup_experiment_user WHERE uid = ?`, uid))
	return g + n, err
}

// namesUID is the condition "this audience_uids row has uid as one of its lines" (a row is
// uids each followed by a newline).
const namesUID = `INSTR(CONCAT('\n', x.uids), CONCAT('\n', ?, '\n')) > 0`

// AudiencesNaming returns the audiences whose committed uploads name uid, by id.
func (r *PrivacyRepo) AudiencesNaming(ctx context.Context, uid string) ([]int64, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT DISTINCT u.audience_id FROM audience_uploads u
		JOIN audience_uids x ON x.upload_id = u.id WHERE u.version IS NOT NULL AND `+namesUID+` ORDER BY u.audience_id`, uid)
	if err != nil {
		return nil, fmt.Errorf("audiences naming the user: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ScrubAudienceUploads cuts uid out of every stored upload row (committed or staged) and returns
// how many rows it rewrote. The fingerprints stay: 8-byte keyed hashes, with which the member
// lists are computed (an erasure's removal makes the version without the uid).
func (r *PrivacyRepo) ScrubAudienceUploads(ctx context.Context, uid string) (int64, error) {
	type key struct {
		upload int64
		seq    int
	}
	rows, err := r.db.QueryContext(ctx, `SELECT x.upload_id, x.seq FROM audience_uids x WHERE `+namesUID, uid)
	if err != nil {
		return 0, fmt.Errorf("upload rows naming the user: %w", err)
	}
	var keys []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.upload, &k.seq); err != nil {
			rows.Close()
			return 0, err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var n int64
	for _, k := range keys {
		// One row (about 1 MiB) at a time, locked while it is rewritten.
		err := inTx(ctx, r.db, func(tx *sql.Tx) error {
			var raw []byte
			err := tx.QueryRowContext(ctx, `SELECT uids FROM audience_uids WHERE upload_id = ? AND seq = ? FOR UPDATE`, k.upload, k.seq).Scan(&raw)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // pruned meanwhile
			}
			if err != nil {
				return err
			}
			out, cut := withoutLine(raw, uid)
			if !cut {
				return nil
			}
			n++
			_, err = tx.ExecContext(ctx, `UPDATE audience_uids SET uids = ? WHERE upload_id = ? AND seq = ?`, out, k.upload, k.seq)
			return err
		})
		if err != nil {
			return n, fmt.Errorf("scrub upload %d row %d: %w", k.upload, k.seq, err)
		}
	}
	return n, nil
}

// withoutLine returns raw (lines each ended by '\n') without the lines equal to line, and
// whether there were any.
func withoutLine(raw []byte, line string) ([]byte, bool) {
	out := make([]byte, 0, len(raw))
	cut := false
	for rest := raw; len(rest) > 0; {
		l, after, found := bytes.Cut(rest, []byte{'\n'})
		rest = after
		if string(l) == line {
			cut = true
			continue
		}
		out = append(out, l...)
		if found {
			out = append(out, '\n')
		}
	}
	return out, cut
}

// Finish marks erasure id done with what it removed and forgets its sealed uid.
func (r *PrivacyRepo) Finish(ctx context.Context, id string, removed map[string]int64, at time.Time) error {
	b, err := json.Marshal(removed)
	if err != nil {
		return err
	}
	var total int64
	for _, n := range removed {
		total += n
	}
	err = inTx(ctx, r.db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE privacy_erasure SET status = ?, sealed_uid = NULL, done_at = ?, removed = ?,
			lease_owner = NULL, lease_until = NULL WHERE id = ? AND status <> ?`, privacy.Done, at, string(b), id, privacy.Done)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // done before (a job run twice): recorded then
		}
		return recordPrivacy(ctx, tx, at, privacy.ErasureActor, changelog.PrivacyErased, id, &total)
	})
	if err != nil {
		return fmt.Errorf("finish erasure: %w", err)
	}
	return nil
}

// RecordExport adds an export of a user's data, made by actor at at, to the audit log (never
// the uid).
func (r *PrivacyRepo) RecordExport(ctx context.Context, actor popup.Actor, at time.Time) error {
	if err := recordPrivacy(ctx, r.db, at, actor, changelog.PrivacyExport, "", nil); err != nil {
		return fmt.Errorf("record the export: %w", err)
	}
	return nil
}

// recordPrivacy writes one privacy request's change (privacy_request_change) through q.
func recordPrivacy(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, at time.Time, actor popup.Actor, action, erasureID string, removed *int64) error {
	var id any
	if erasureID != "" {
		id = erasureID
	}
	_, err := q.ExecContext(ctx, `INSERT INTO privacy_request_change (at, actor, actor_role, action, erasure_id, removed) VALUES (?, ?, ?, ?, ?, ?)`,
		toDB(at), actor.Name, roleColumn(actor.Role), action, id, removed)
	return err
}

// UserStateRows returns uid's rows of popup_user_state, by popup.
func (r *PrivacyRepo) UserStateRows(ctx context.Context, uid string) (map[int64]popup.PopupState, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT popup_id, next_show_at, impressions, last_impression_at, last_click_at, last_close_at
		FROM popup_user_state WHERE uid = ?`, uid)
	if err != nil {
		return nil, fmt.Errorf("read user state: %w", err)
	}
	defer rows.Close()
	out := map[int64]popup.PopupState{}
	for rows.Next() {
		var (
			id                         int64
			ps                         popup.PopupState
			next, imp, click, closedAt time.Time
		)
		if err := rows.Scan(&id, &next, &ps.Impressions, &imp, &click, &closedAt); err != nil {
			return nil, err
		}
		ps.NextShowAt, ps.LastImpressionAt, ps.LastClickAt, ps.LastCloseAt = fromDB(next), fromDB(imp), fromDB(click), fromDB(closedAt)
		out[id] = ps
	}
	return out, rows.Err()
}

// Actions returns uid's rows of the action log, oldest first.
func (r *PrivacyRepo) Actions(ctx context.Context, uid string) ([]privacy.Action, error) {
	q := `SELECT popup_id, action, event_at, event_id, decision_id, button FROM popup_action_log WHERE uid = ?`
	args := []any{uid}
	var old int
	if err := r.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`, tableLogUnpartitioned).Scan(&old); err != nil {
		return nil, fmt.Errorf("read action log: %w", err)
	}
	if old > 0 {
		// The log of before migration 00015 not yet copied; UNION drops the rows in both.
		q += ` UNION SELECT popup_id, action, event_at, event_id, decision_id, button FROM ` + tableLogUnpartitioned + ` WHERE uid = ?`
		args = append(args, uid)
	}
	rows, err := r.db.QueryContext(ctx, q+` ORDER BY event_at, event_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("read action log: %w", err)
	}
	defer rows.Close()
	out := []privacy.Action{}
	for rows.Next() {
		var a privacy.Action
		if err := rows.Scan(&a.PopupID, &a.Action, &a.At, &a.EventID, &a.DecisionID, &a.Button); err != nil {
			return nil, err
		}
		a.At = a.At.UTC()
		out = append(out, a)
	}
	return out, rows.Err()
}

// ExperimentRows returns uid's rows of popup_experiment_user.
func (r *PrivacyRepo) ExperimentRows(ctx context.Context, uid string) ([]privacy.Experiment, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT popup_id, salt, arm, first_exposed_at, exposures, clicks, closes, first_click_at
		FROM popup_experiment_user WHERE uid = ? ORDER BY popup_id, first_exposed_at`, uid)
	if err != nil {
		return nil, fmt.Errorf("read experiment rows: %w", err)
	}
	defer rows.Close()
	out := []privacy.Experiment{}
	for rows.Next() {
		var (
			x     privacy.Experiment
			click sql.NullTime
		)
		if err := rows.Scan(&x.PopupID, &x.Salt, &x.Arm, &x.FirstExposedAt, &x.Exposures, &x.Clicks, &x.Closes, &click); err != nil {
			return nil, err
		}
		x.FirstExposedAt = x.FirstExposedAt.UTC()
		if click.Valid {
			x.FirstClickAt = click.Time.UTC()
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// Conversions returns uid's rows of the conversion log, oldest first.
func (r *PrivacyRepo) Conversions(ctx context.Context, uid string) ([]privacy.Conversion, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT goal_key, event_id, value, event_at FROM popup_conversion_log
		WHERE uid = ? ORDER BY event_at, event_id`, uid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []privacy.Conversion{}
	for rows.Next() {
		var c privacy.Conversion
		if err := rows.Scan(&c.Goal, &c.EventID, &c.Value, &c.At); err != nil {
			return nil, err
		}
		c.At = c.At.UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

// GoalRows returns uid's goal attribution (popup_experiment_goal_user), by popup, phase and goal.
func (r *PrivacyRepo) GoalRows(ctx context.Context, uid string) ([]privacy.GoalAttribution, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT popup_id, salt, goal_key, arm, conversions, value_sum, first_at
		FROM popup_experiment_goal_user WHERE uid = ? ORDER BY popup_id, first_at, salt, goal_key`, uid)
	if err != nil {
		return nil, fmt.Errorf("read goal attribution: %w", err)
	}
	defer rows.Close()
	out := []privacy.GoalAttribution{}
	for rows.Next() {
		var g privacy.GoalAttribution
		if err := rows.Scan(&g.PopupID, &g.Salt, &g.Goal, &g.Arm, &g.Conversions, &g.ValueSum, &g.FirstAt); err != nil {
			return nil, err
		}
		g.FirstAt = g.FirstAt.UTC()
		out = append(out, g)
	}
	return out, rows.Err()
}

// UploadRows returns the stored audience upload rows (committed or staged) whose uid lists name
// uid, the rows an erasure cuts it out of.
func (r *PrivacyRepo) UploadRows(ctx context.Context, uid string) ([]privacy.UploadRow, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT u.audience_id, x.upload_id, x.seq, COALESCE(u.version, 0)
		FROM audience_uids x JOIN audience_uploads u ON u.id = x.upload_id WHERE `+namesUID+`
		ORDER BY u.audience_id, x.upload_id, x.seq`, uid)
	if err != nil {
		return nil, fmt.Errorf("read upload rows: %w", err)
	}
	defer rows.Close()
	out := []privacy.UploadRow{}
	for rows.Next() {
		var u privacy.UploadRow
		if err := rows.Scan(&u.AudienceID, &u.UploadID, &u.Part, &u.Version); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// KeptRows counts, per table and popup, the rows that name uid as a QA uid of a popup's
// targeting (targeting.uids): the popup itself, its revisions and its audit entries, which an
// erasure keeps (docs/SECURITY.md).
func (r *PrivacyRepo) KeptRows(ctx context.Context, uid string) ([]privacy.Kept, error) {
	rows, err := r.db.QueryContext(ctx, `
		SELECT 'popup_config', id, COUNT(*) FROM popup_config
			WHERE JSON_CONTAINS(targeting, JSON_QUOTE(?), '$.uids') GROUP BY id
		UNION ALL
		SELECT 'popup_revision', popup_id, COUNT(*) FROM popup_revision
			WHERE JSON_CONTAINS(popup, JSON_QUOTE(?), '$.targeting.uids') GROUP BY popup_id
		UNION ALL
		SELECT 'popup_audit', popup_id, COUNT(*) FROM popup_audit
			WHERE JSON_CONTAINS(COALESCE(before_state, '{}'), JSON_QUOTE(?), '$.targeting.uids')
			   OR JSON_CONTAINS(COALESCE(after_state, '{}'), JSON_QUOTE(?), '$.targeting.uids') GROUP BY popup_id
		ORDER BY 1, 2`, uid, uid, uid, uid)
	if err != nil {
		return nil, fmt.Errorf("read kept rows: %w", err)
	}
	defer rows.Close()
	out := []privacy.Kept{}
	for rows.Next() {
		var k privacy.Kept
		if err := rows.Scan(&k.Table, &k.PopupID, &k.Rows); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// dropErased is the event writer's tombstone check, inside the batch's transaction: it holds the
// barrier row in share mode (an erasure's tombstone waits for the batch, or the batch for the
// tombstone's commit), reads the tombstones of the batch's uids with a locking read (the latest
// committed), and returns the events to write and how many it dropped (privacy.Tombstone.Drops).
func dropErased(ctx context.Context, tx *sql.Tx, keyed *privacy.Keyed, events []event.Event) ([]event.Event, int, error) {
	if _, err := tx.ExecContext(ctx, `SELECT erasures FROM privacy_barrier WHERE id = 1 LOCK IN SHARE MODE`); err != nil {
		return nil, 0, err
	}
	hashes := make(map[string]string, len(events)) // uid → hash
	args := make([]any, 0, len(events))
	for i := range events {
		uid := events[i].UID
		if _, ok := hashes[uid]; ok {
			continue
		}
		h := keyed.UID(uid)
		hashes[uid] = h
		args = append(args, h)
	}
	q := `SELECT uid_hash, cutoff FROM privacy_tombstone WHERE uid_hash IN (?` + strings.Repeat(",?", len(args)-1) + `) LOCK IN SHARE MODE`
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	stones := map[string]privacy.Tombstone{}
	for rows.Next() {
		var (
			t      privacy.Tombstone
			cutoff sql.NullTime
		)
		if err := rows.Scan(&t.UIDHash, &cutoff); err != nil {
			return nil, 0, err
		}
		if cutoff.Valid {
			t.Cutoff = cutoff.Time.UTC()
		}
		stones[t.UIDHash] = t
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(stones) == 0 {
		return events, 0, nil
	}
	kept := make([]event.Event, 0, len(events))
	for _, e := range events {
		if t, ok := stones[hashes[e.UID]]; ok && t.Drops(e.At) {
			continue
		}
		kept = append(kept, e)
	}
	return kept, len(events) - len(kept), nil
}

// inTx runs fn in a transaction of db (a pool or one of its connections), committed when fn
// returns nil.
func inTx(ctx context.Context, db interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
