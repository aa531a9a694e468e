package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
	"popupsvc/internal/popupdoc"
)

// AudienceRepo stores audiences (docs/CONTRACT.md §11): their records and history, and their
// member lists as uploads of sorted fingerprint runs and of the uids sent. Persistence only: the
// rules of a write (roles, If-Match, limits, the memory budget) are internal/manage's, which runs
// the commit of a write in the repository's transaction (InTx) and stages its upload through the
// Stage methods before it.
//
// A member list at version v is its base (the fingerprints of the last replace, or the empty
// list of the create) with every add and remove committed after the base applied in version
// order, each upload holding only the fingerprints that really change the list.
type AudienceRepo struct {
	db *sql.DB
	// stage is the pool the staged rows are written through (StageThrough; nil: db).
	stage *sql.DB
	// onLoad, when set, is told the bytes of a base set about to be read (memlimit.Governor).
	onLoad func(bytes int64)
	// stmts are the staging statements, prepared on first use and kept: an upload writes
	// thousands of rows, each then one round trip instead of three (prepare, execute, close).
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
}

// NewAudienceRepo returns a repository over db.
func NewAudienceRepo(db *sql.DB) *AudienceRepo { return &AudienceRepo{db: db} }

// StageThrough makes r write the rows of a staged upload (StageUIDs, StageFingerprints) through
// stage, a pool that speaks the binary character set (NewStagingPool), and returns r.
func (r *AudienceRepo) StageThrough(stage *sql.DB) *AudienceRepo {
	r.stage = stage
	return r
}

// OnLoad makes r tell f the bytes of every base set it is about to read, before it reads it,
// and returns r.
func (r *AudienceRepo) OnLoad(f func(bytes int64)) *AudienceRepo {
	r.onLoad = f
	return r
}

// FingerprintsPerRow is how many fingerprints one audience_fps row holds (128 KiB of them): a
// 10-million-member list is 611 rows. A row stays under StageRowBytes.
const FingerprintsPerRow = StageRowBytes / 8

// StageRowBytes is the most a staged row (of fingerprints or of uids) should hold: the MySQL
// driver keeps a connection's packet buffer for reuse only up to 256 KiB, so a larger row costs
// two copies of itself in garbage on every statement that writes it, and one on every read (a
// 20 M replace: about a gigabyte, a collection every second on the process that serves the
// public API), where a row of this size costs none once the buffer has grown to it.
const StageRowBytes = 128 << 10

const audienceColumns = `id, name, description, size, version, created_at, updated_at, fp_key`

func scanAudience(s scanner) (popup.Audience, error) {
	var (
		a   popup.Audience
		key []byte
	)
	if err := s.Scan(&a.ID, &a.Name, &a.Description, &a.Size, &a.Version, &a.CreatedAt, &a.UpdatedAt, &key); err != nil {
		return a, err
	}
	if len(key) != len(a.Key) {
		return a, fmt.Errorf("audience %d: stored key of %d bytes", a.ID, len(key))
	}
	copy(a.Key[:], key)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, nil
}

type rowQuerier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

func getAudience(ctx context.Context, q rowQuerier, id int64, lock string) (popup.Audience, error) {
	a, err := scanAudience(q.QueryRowContext(ctx, `SELECT `+audienceColumns+` FROM audiences WHERE id = ?`+lock, id))
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Audience{}, fmt.Errorf("audience %d: %w", id, popup.ErrAudienceNotFound)
	}
	if err != nil {
		return popup.Audience{}, fmt.Errorf("read audience %d: %w", id, err)
	}
	return a, nil
}

// Get returns audience id.
func (r *AudienceRepo) Get(ctx context.Context, id int64) (popup.Audience, error) {
	return getAudience(ctx, r.db, id, "")
}

// List returns every audience by id.
func (r *AudienceRepo) List(ctx context.Context) ([]popup.Audience, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+audienceColumns+` FROM audiences ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list audiences: %w", err)
	}
	defer rows.Close()
	out := []popup.Audience{}
	for rows.Next() {
		a, err := scanAudience(rows)
		if err != nil {
			return nil, fmt.Errorf("list audiences: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// UsedBy returns, for every audience a popup that is not archived targets (include or exclude),
// those popups by id.
func (r *AudienceRepo) UsedBy(ctx context.Context) (map[int64][]popup.AudienceUser, error) {
	return usedBy(ctx, r.db)
}

// usedBy reads the targeting of every popup that is not archived. Which audiences a popup uses
// lives in its targeting JSON, read through popupdoc (the one reader of that column).
func usedBy(ctx context.Context, q rowQuerier) (map[int64][]popup.AudienceUser, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, name, status, targeting FROM popup_config WHERE status <> 'archived' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("popups using audiences: %w", err)
	}
	defer rows.Close()
	out := map[int64][]popup.AudienceUser{}
	for rows.Next() {
		var (
			u      popup.AudienceUser
			status string
			raw    []byte
		)
		if err := rows.Scan(&u.ID, &u.Name, &status, &raw); err != nil {
			return nil, fmt.Errorf("popups using audiences: %w", err)
		}
		u.Status = popup.Status(status)
		var t popupdoc.Targeting
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("popup %d targeting: %w", u.ID, err)
		}
		for _, id := range targetedAudiences(t.Popup()) {
			if users := out[id]; len(users) == 0 || users[len(users)-1].ID != u.ID {
				out[id] = append(users, u)
			}
		}
	}
	return out, rows.Err()
}

// Versions returns the current version of each audience of ids that exists (absent: deleted or
// never existed).
func (r *AudienceRepo) Versions(ctx context.Context, ids []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(ids))
	for start := 0; start < len(ids); start += importBatch {
		batch := ids[start:min(start+importBatch, len(ids))]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		rows, err := r.db.QueryContext(ctx, `SELECT id, version FROM audiences WHERE id IN `+placeholders(1, len(batch)), args...)
		if err != nil {
			return nil, fmt.Errorf("audience versions: %w", err)
		}
		for rows.Next() {
			var id, v int64
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("audience versions: %w", err)
			}
			out[id] = v
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("audience versions: %w", err)
		}
	}
	return out, nil
}

// LoadSet returns audience id's current member set. When have is a set of the same audience at
// a version at or after the current base_version, only the deltas committed after have.Version
// are read and applied to it; otherwise the base's fps rows and every delta since. have may be
// nil. A missing audience is popup.ErrAudienceNotFound.
func (r *AudienceRepo) LoadSet(ctx context.Context, id int64, have *audience.Set) (*audience.Set, error) {
	var set *audience.Set
	err := r.inReadTx(ctx, func(tx *sql.Tx) (err error) {
		set, err = loadSet(ctx, tx, id, have, r.onLoad)
		return err
	})
	return set, err
}

// inReadTx runs fn in a read-only transaction of one snapshot (REPEATABLE READ): a list's base,
// its deltas and its uids are of one version, whatever commits and prunes meanwhile.
func (r *AudienceRepo) inReadTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin audience read: %w", err)
	}
	defer tx.Rollback() // read-only
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// listState is where an audience's member list stands: its key, version, base and size.
type listState struct {
	key                 audience.Key
	version, base, size int64
}

func readListState(ctx context.Context, tx *sql.Tx, id int64) (listState, error) {
	var (
		s   listState
		key []byte
	)
	err := tx.QueryRowContext(ctx, `SELECT fp_key, version, base_version, size FROM audiences WHERE id = ?`, id).Scan(&key, &s.version, &s.base, &s.size)
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("audience %d: %w", id, popup.ErrAudienceNotFound)
	}
	if err != nil {
		return s, fmt.Errorf("read audience %d: %w", id, err)
	}
	if len(key) != len(s.key) {
		return s, fmt.Errorf("audience %d: stored key of %d bytes", id, len(key))
	}
	copy(s.key[:], key)
	return s, nil
}

// listUpload is a committed upload of a list: the version it made and what it did.
type listUpload struct {
	version int64
	action  popup.AudienceAction
	upload  int64
}

// uploadsSince returns the member uploads committed at versions in (after, through], in order,
// of the actions given.
func uploadsSince(ctx context.Context, tx *sql.Tx, id, after, through int64, actions ...popup.AudienceAction) ([]listUpload, error) {
	args := []any{id, after, through}
	for _, a := range actions {
		args = append(args, string(a))
	}
	rows, err := tx.QueryContext(ctx, `SELECT version, action, upload_id FROM audience_changes
		WHERE audience_id = ? AND version > ? AND version <= ? AND upload_id IS NOT NULL AND action IN `+placeholders(1, len(actions))+`
		ORDER BY version`, args...)
	if err != nil {
		return nil, fmt.Errorf("audience %d uploads: %w", id, err)
	}
	defer rows.Close()
	var out []listUpload
	for rows.Next() {
		var (
			u      listUpload
			action string
		)
		if err := rows.Scan(&u.version, &action, &u.upload); err != nil {
			return nil, fmt.Errorf("audience %d uploads: %w", id, err)
		}
		u.action = popup.AudienceAction(action)
		out = append(out, u)
	}
	return out, rows.Err()
}

func loadSet(ctx context.Context, tx *sql.Tx, id int64, have *audience.Set, onLoad func(int64)) (*audience.Set, error) {
	st, err := readListState(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	set, from := have, int64(0)
	if have != nil && have.ID() == id && have.Key() == st.key && have.Version() >= st.base && have.Version() <= st.version {
		if have.Version() == st.version {
			return have, nil
		}
		from = have.Version()
	} else {
		// The base: the replace at base_version, or the empty list of the create.
		bases, err := uploadsSince(ctx, tx, id, st.base-1, st.base, popup.AudienceReplace)
		if err != nil {
			return nil, err
		}
		var fps []uint64
		if len(bases) == 1 {
			if onLoad != nil {
				onLoad(int64(float64(st.size) * audience.BytesPerMember))
			}
			if fps, err = readFingerprints(ctx, tx, bases[0].upload, make([]uint64, 0, st.size)); err != nil {
				return nil, err
			}
		}
		if set, err = audience.NewSet(id, st.base, st.key, fps); err != nil {
			return nil, fmt.Errorf("audience %d base: %w", id, err)
		}
		from = st.base
	}
	deltas, err := uploadsSince(ctx, tx, id, from, st.version, popup.AudienceAdd, popup.AudienceRemove)
	if err != nil {
		return nil, err
	}
	for _, d := range deltas {
		fps, err := readFingerprints(ctx, tx, d.upload, nil)
		if err != nil {
			return nil, err
		}
		delta := audience.Delta{Add: fps}
		if d.action == popup.AudienceRemove {
			delta = audience.Delta{Remove: fps}
		}
		if set, _, _, err = set.Apply(d.version, delta); err != nil {
			return nil, fmt.Errorf("audience %d version %d: %w", id, d.version, err)
		}
	}
	if set.Version() != st.version {
		// Writes of the metadata since the last member write: the same members, at the version.
		if set, err = audience.NewSet(id, st.version, st.key, set.Fingerprints()); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// readFingerprints appends the fingerprints of upload's fps rows, in order, to dst.
func readFingerprints(ctx context.Context, tx *sql.Tx, upload int64, dst []uint64) ([]uint64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT fps FROM audience_fps WHERE upload_id = ? ORDER BY seq`, upload)
	if err != nil {
		return nil, fmt.Errorf("upload %d fingerprints: %w", upload, err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw sql.RawBytes
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("upload %d fingerprints: %w", upload, err)
		}
		if dst, err = audience.AppendDecoded(dst, raw); err != nil {
			return nil, fmt.Errorf("upload %d: %w", upload, err)
		}
		// The rows stream in faster than they are decoded, so the reads seldom park: without a
		// yield the load of a 20 M set's 1,221 rows kept its P until preempted, 14-19 ms at a
		// time, and on one P (GOMAXPROCS=1, as a one-core limit sets it) the public GETs queued
		// behind it and were answered in batches 20 ms apart (a runtime trace of make
		// bench-upload). A row is about 0.1 ms of decoding.
		runtime.Gosched()
	}
	return dst, rows.Err()
}

// MemberRows reads audience id's member list at one version: start gets its set (have as
// LoadSet takes it), then row gets each row of the uids that made it (the base's upload, then
// every later add's), in order: newline-joined uids, some of them no longer members or sent
// twice. row's bytes are valid only during the call.
func (r *AudienceRepo) MemberRows(ctx context.Context, id int64, have *audience.Set, start func(*audience.Set) error, row func([]byte) error) error {
	return r.inReadTx(ctx, func(tx *sql.Tx) error {
		set, err := loadSet(ctx, tx, id, have, r.onLoad)
		if err != nil {
			return err
		}
		if err := start(set); err != nil {
			return err
		}
		st, err := readListState(ctx, tx, id)
		if err != nil {
			return err
		}
		uploads, err := uploadsSince(ctx, tx, id, st.base-1, st.version, popup.AudienceReplace, popup.AudienceAdd)
		if err != nil {
			return err
		}
		for _, u := range uploads {
			if err := uidRows(ctx, tx, u.upload, row); err != nil {
				return err
			}
		}
		return nil
	})
}

func uidRows(ctx context.Context, tx *sql.Tx, upload int64, row func([]byte) error) error {
	rows, err := tx.QueryContext(ctx, `SELECT uids FROM audience_uids WHERE upload_id = ? ORDER BY seq`, upload)
	if err != nil {
		return fmt.Errorf("upload %d uids: %w", upload, err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw sql.RawBytes
		if err := rows.Scan(&raw); err != nil {
			return fmt.Errorf("upload %d uids: %w", upload, err)
		}
		if err := row(raw); err != nil {
			return err
		}
	}
	return rows.Err()
}

// History returns audience id's changes, newest first; an audience with none (never created) is
// popup.ErrAudienceNotFound. A deleted audience's history is kept.
func (r *AudienceRepo) History(ctx context.Context, id int64) ([]popup.AudienceChange, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT version, at, actor, actor_role, action, upload_id, added, removed, size
		FROM audience_changes WHERE audience_id = ? ORDER BY version DESC`, id)
	if err != nil {
		return nil, fmt.Errorf("audience %d history: %w", id, err)
	}
	defer rows.Close()
	out := []popup.AudienceChange{}
	for rows.Next() {
		var (
			c      = popup.AudienceChange{AudienceID: id}
			role   sql.NullString
			action string
			upload sql.NullInt64
		)
		if err := rows.Scan(&c.Version, &c.At, &c.Actor.Name, &role, &action, &upload, &c.Added, &c.Removed, &c.Size); err != nil {
			return nil, fmt.Errorf("audience %d history: %w", id, err)
		}
		c.At, c.Actor.Role, c.Action, c.Upload = c.At.UTC(), roleOf(role), popup.AudienceAction(action), upload.Int64
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audience %d history: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("audience %d: %w", id, popup.ErrAudienceNotFound)
	}
	return out, nil
}

// StageUpload starts a member upload of audience id: its parts are written by StageUIDs and
// StageFingerprints, outside the commit's transaction, and it counts only once
// Tx.SetAudienceMembers commits it.
func (r *AudienceRepo) StageUpload(ctx context.Context, id int64) (int64, error) {
	res, err := r.db.ExecContext(ctx, `INSERT INTO audience_uploads (audience_id) VALUES (?)`, id)
	if err != nil {
		return 0, fmt.Errorf("stage upload: %w", err)
	}
	return res.LastInsertId()
}

// StageUIDs writes row seq of a staged upload's uids (newline-joined).
func (r *AudienceRepo) StageUIDs(ctx context.Context, upload int64, seq int, uids []byte) error {
	if err := r.execPrepared(ctx, `INSERT INTO audience_uids (upload_id, seq, uids) VALUES (?, ?, ?)`, upload, seq, uids); err != nil {
		return fmt.Errorf("stage upload %d uids: %w", upload, err)
	}
	return nil
}

// StageFingerprints writes a staged upload's fingerprints (sorted and distinct), in rows of
// FingerprintsPerRow, replacing any it had; pace, when not nil, is told the fingerprints of each
// row written (an error from it ends the write).
func (r *AudienceRepo) StageFingerprints(ctx context.Context, upload int64, fps []uint64, pace func(n int) error) error {
	if _, err := r.db.ExecContext(ctx, `DELETE FROM audience_fps WHERE upload_id = ?`, upload); err != nil {
		return fmt.Errorf("stage upload %d fingerprints: %w", upload, err)
	}
	buf := make([]byte, 0, 8*min(len(fps), FingerprintsPerRow))
	for seq := 0; len(fps) > 0; seq++ {
		n := min(len(fps), FingerprintsPerRow)
		buf = audience.AppendFingerprints(buf[:0], fps[:n])
		fps = fps[n:]
		if err := r.execPrepared(ctx, `INSERT INTO audience_fps (upload_id, seq, fps) VALUES (?, ?, ?)`, upload, seq, buf); err != nil {
			return fmt.Errorf("stage upload %d fingerprints: %w", upload, err)
		}
		if pace != nil {
			if err := pace(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// execPrepared runs query as a server-side prepared statement on the staging pool (StageThrough),
// prepared once per repository: a row goes out in the binary protocol as it is, where the pool's
// client-side interpolation escapes it into a query string, several times its size in garbage
// and CPU on the serving process.
func (r *AudienceRepo) execPrepared(ctx context.Context, query string, args ...any) error {
	r.stmtMu.Lock()
	stmt := r.stmts[query]
	if stmt == nil {
		db := r.db
		if r.stage != nil {
			db = r.stage
		}
		var err error
		if stmt, err = db.PrepareContext(ctx, query); err != nil {
			r.stmtMu.Unlock()
			return err
		}
		if r.stmts == nil {
			r.stmts = make(map[string]*sql.Stmt)
		}
		r.stmts[query] = stmt
	}
	r.stmtMu.Unlock()
	_, err := stmt.ExecContext(ctx, args...)
	return err
}

// DropUpload removes a staged upload and its parts; a committed one is left alone (a commit
// whose outcome was lost with its connection may have made it).
func (r *AudienceRepo) DropUpload(ctx context.Context, upload int64) error {
	res, err := r.db.ExecContext(ctx, `DELETE FROM audience_uploads WHERE id = ? AND version IS NULL`, upload)
	if err != nil {
		return fmt.Errorf("drop upload %d: %w", upload, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	return dropParts(ctx, r.db, []int64{upload})
}

// Prune removes the uploads of audience id that no version from base on reads (committed below
// base: superseded by the replace at base) and those staged more than a day ago (a process that
// died mid-upload), with their parts; and any left by a deleted audience.
func (r *AudienceRepo) Prune(ctx context.Context, id, base int64) error {
	return r.dropUploads(ctx, `audience_id = ? AND (version < ? OR version IS NULL AND created_at < NOW(3) - INTERVAL 1 DAY)
		OR audience_id NOT IN (SELECT id FROM audiences)`, id, base)
}

// DropAudienceParts removes every upload of a deleted audience, with their parts.
func (r *AudienceRepo) DropAudienceParts(ctx context.Context, id int64) error {
	return r.dropUploads(ctx, `audience_id = ?`, id)
}

func (r *AudienceRepo) dropUploads(ctx context.Context, where string, args ...any) error {
	rows, err := r.db.QueryContext(ctx, `SELECT id FROM audience_uploads WHERE `+where, args...)
	if err != nil {
		return fmt.Errorf("uploads to drop: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return err
	}
	if err := dropParts(ctx, r.db, ids); err != nil {
		return err
	}
	args = make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	_, err = r.db.ExecContext(ctx, `DELETE FROM audience_uploads WHERE id IN `+placeholders(1, len(ids)), args...)
	return err
}

// dropRows is how many staged rows (about 16 MiB) one statement of dropParts deletes.
const dropRows = 16 << 20 / StageRowBytes

// dropParts deletes the fps and uids rows of uploads, dropRows a statement so that no statement
// holds gigabytes of undo.
func dropParts(ctx context.Context, db *sql.DB, uploads []int64) error {
	for _, up := range uploads {
		for _, table := range []string{"audience_fps", "audience_uids"} {
			for {
				res, err := db.ExecContext(ctx, `DELETE FROM `+table+` WHERE upload_id = ? LIMIT `+strconv.Itoa(dropRows), up)
				if err != nil {
					return fmt.Errorf("drop upload %d parts: %w", up, err)
				}
				if n, _ := res.RowsAffected(); n < dropRows {
					break
				}
			}
		}
	}
	return nil
}

// InTx runs fn in one transaction at READ COMMITTED, committed when fn returns nil: a member
// write's commit locks its audience row (and the memory budget's row) first, and every read
// after the locks sees what the writes serialized before it committed.
func (r *AudienceRepo) InTx(ctx context.Context, fn func(*Tx) error) error {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit it is a no-op
	if err := fn(&Tx{tx: tx}); err != nil {
		return err
	}
	return tx.Commit()
}

// InsertAudience stores a new audience at version 1 with an empty list; a name another audience
// has is popup.ErrAudienceNameTaken.
func (t *Tx) InsertAudience(ctx context.Context, m popup.AudienceMeta, key audience.Key) (popup.Audience, error) {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO audiences (name, description, fp_key, version, base_version, size)
		VALUES (?, ?, ?, 1, 1, 0)`, m.Name, m.Description, key[:])
	if err != nil {
		return popup.Audience{}, audienceNameTaken(err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return popup.Audience{}, err
	}
	return getAudience(ctx, t.tx, id, "")
}

// LockAudience reads audience id and locks its row until the transaction ends.
func (t *Tx) LockAudience(ctx context.Context, id int64) (popup.Audience, error) {
	return getAudience(ctx, t.tx, id, " FOR UPDATE")
}

// AudienceUsers returns the popups that are not archived and target audience id, by id.
func (t *Tx) AudienceUsers(ctx context.Context, id int64) ([]popup.AudienceUser, error) {
	m, err := usedBy(ctx, t.tx)
	return m[id], err
}

// OtherMembers locks the audiences' memory budget until the transaction ends (the config
// version's row: two member writes of different audiences check the budget one after the other)
// and returns the members of every audience but id.
func (t *Tx) OtherMembers(ctx context.Context, id int64) (int64, error) {
	var v, n int64
	if err := t.tx.QueryRowContext(ctx, `SELECT version FROM popup_config_version WHERE id = 1 FOR UPDATE`).Scan(&v); err != nil {
		return 0, fmt.Errorf("lock the audience budget: %w", err)
	}
	if err := t.tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM audiences WHERE id <> ?`, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("members of the other audiences: %w", err)
	}
	return n, nil
}

// SetAudienceMeta writes audience id's name and description at version.
func (t *Tx) SetAudienceMeta(ctx context.Context, id int64, m popup.AudienceMeta, version int64) (popup.Audience, error) {
	if _, err := t.tx.ExecContext(ctx, `UPDATE audiences SET name = ?, description = ?, version = ?, updated_at = CURRENT_TIMESTAMP(3) WHERE id = ?`,
		m.Name, m.Description, version, id); err != nil {
		return popup.Audience{}, audienceNameTaken(err)
	}
	return getAudience(ctx, t.tx, id, "")
}

// SetAudienceMembers commits staged upload as audience id's list at version, of size members;
// rebase (a replace) makes it the base that later versions apply their deltas to.
func (t *Tx) SetAudienceMembers(ctx context.Context, id, upload, version, size int64, rebase bool) (popup.Audience, error) {
	res, err := t.tx.ExecContext(ctx, `UPDATE audience_uploads SET version = ? WHERE id = ? AND audience_id = ? AND version IS NULL`, version, upload, id)
	if err != nil {
		return popup.Audience{}, fmt.Errorf("commit upload %d: %w", upload, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return popup.Audience{}, fmt.Errorf("commit upload %d: not a staged upload of audience %d (%v)", upload, id, err)
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE audiences SET version = ?, base_version = IF(?, ?, base_version), size = ?,
		updated_at = CURRENT_TIMESTAMP(3) WHERE id = ?`, version, rebase, version, size, id); err != nil {
		return popup.Audience{}, fmt.Errorf("write audience %d: %w", id, err)
	}
	return getAudience(ctx, t.tx, id, "")
}

// DeleteAudience removes audience id's row; its uploads go after the commit (DropAudienceParts)
// and its history stays.
func (t *Tx) DeleteAudience(ctx context.Context, id int64) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM audiences WHERE id = ?`, id)
	return err
}

// RecordAudience adds a change to its audience's history.
func (t *Tx) RecordAudience(ctx context.Context, c popup.AudienceChange) error {
	var upload any
	if c.Upload > 0 {
		upload = c.Upload
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO audience_changes (audience_id, version, at, actor, actor_role, action, upload_id, added, removed, size)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.AudienceID, c.Version, c.At.UTC(), c.Actor.Name, roleColumn(c.Actor.Role), string(c.Action), upload, c.Added, c.Removed, c.Size)
	if err != nil {
		return fmt.Errorf("record audience %d version %d: %w", c.AudienceID, c.Version, err)
	}
	return nil
}

// ExistingAudiences returns which of ids are audiences, locking their rows in share mode until
// the transaction ends: an audience a popup write names cannot be deleted before it commits.
func (t *Tx) ExistingAudiences(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT id FROM audiences WHERE id IN `+placeholders(1, len(ids))+` ORDER BY id LOCK IN SHARE MODE`, args...)
	if err != nil {
		return nil, fmt.Errorf("audiences: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// audienceNameTaken turns a clash on the unique index of audience names into
// popup.ErrAudienceNameTaken.
func audienceNameTaken(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 && strings.Contains(me.Message, "uk_audiences_name") {
		return fmt.Errorf("%w: %s", popup.ErrAudienceNameTaken, me.Message)
	}
	return err
}

// targetedAudiences are the audiences a popup's targeting names, include and exclude, sorted and
// distinct.
func targetedAudiences(t popup.Targeting) []int64 {
	ids := t.Audiences.IDs()
	slices.Sort(ids)
	return slices.Compact(ids)
}
