package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"popupsvc/internal/changelog"
	"popupsvc/internal/popup"
	"popupsvc/internal/popupdoc"
	"popupsvc/internal/popuplist"
)

// encodeDoc is p as popup_revision and popup_audit store it (popupdoc.Revision).
func encodeDoc(p popup.Popup) ([]byte, error) {
	return json.Marshal(popupdoc.RevisionOf(&p))
}

// decodeDoc reads a revision or audit document, whichever release wrote it (migration 00004
// wrote those of the popups that existed before it).
func decodeDoc(raw []byte) (popup.Popup, error) {
	var d popupdoc.Revision
	if err := json.Unmarshal(raw, &d); err != nil {
		return popup.Popup{}, fmt.Errorf("stored revision: %w", err)
	}
	p := d.Popup()
	p.BucketSeed = p.RolloutSeed() // a revision from before migration 00007: the seed it gave the popup
	return p, nil
}

// decodeNullDoc decodes an audit entry's before or after (NULL = none).
func decodeNullDoc(raw []byte) (*popup.Popup, error) {
	if raw == nil {
		return nil, nil
	}
	p, err := decodeDoc(raw)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// recordBatch bounds the rows of one multi-row INSERT (a popup's JSON is up to a few KiB, twice
// in an audit row): well under max_allowed_packet.
const recordBatch = 200

// record writes each change's revision row and audit row through tx, in multi-row INSERTs.
func record(ctx context.Context, tx *sql.Tx, changes []popup.Change) error {
	for len(changes) > 0 {
		n := min(len(changes), recordBatch)
		batch := changes[:n]
		changes = changes[n:]
		revArgs := make([]any, 0, 6*n)
		auditArgs := make([]any, 0, 8*n)
		for _, c := range batch {
			after, err := encodeDoc(c.After)
			if err != nil {
				return err
			}
			var before []byte
			if c.Before != nil {
				if before, err = encodeDoc(*c.Before); err != nil {
					return err
				}
			}
			role := roleColumn(c.Actor.Role)
			revArgs = append(revArgs, c.After.ID, c.After.Revision, c.After.UpdatedAt, c.Actor.Name, role, after)
			auditArgs = append(auditArgs, c.After.UpdatedAt, c.Actor.Name, role, string(c.Action), c.After.ID, c.After.Revision, before, after)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO popup_revision (popup_id, revision, at, actor, actor_role, popup) VALUES `+
			placeholders(n, 6), revArgs...); err != nil {
			return fmt.Errorf("record revisions: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO popup_audit (at, actor, actor_role, action, popup_id, revision, before_state, after_state) VALUES `+
			placeholders(n, 8), auditArgs...); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
	}
	return nil
}

// roleColumn is a role as the actor_role columns hold it: its name, NULL for no role.
func roleColumn(r popup.Role) any {
	if !r.Valid() {
		return nil
	}
	return r.String()
}

// roleOf reads an actor_role column: NULL (a write from before roles were recorded) is no role.
func roleOf(s sql.NullString) popup.Role {
	r, _ := popup.ParseRole(s.String) // NULL or a name this binary does not know: no role
	return r
}

// placeholders is "(?, ?), (?, ?)" for rows rows of cols columns.
func placeholders(rows, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}

// getForUpdate reads one popup through tx and locks its row until the transaction ends.
func getForUpdate(ctx context.Context, tx *sql.Tx, id int64) (popup.Popup, error) {
	p, err := scanPopup(tx.QueryRowContext(ctx, `SELECT `+popupColumns+` FROM popup_config WHERE id = ? FOR UPDATE`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Popup{}, fmt.Errorf("popup %d: %w", id, popup.ErrNotFound)
	}
	return p, err
}

// nameTaken turns a clash on the unique index of live names into popup.ErrNameTaken.
func nameTaken(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 && strings.Contains(me.Message, "active_name") {
		return fmt.Errorf("%w: %s", popup.ErrNameTaken, me.Message)
	}
	return err
}

// Find returns one page of popups and the number matching the filters (see popuplist.Query).
// Pages continue by keyset, (sort key, id) past the previous page's last popup, so a page costs
// the same wherever it is and popups sharing a key are neither repeated nor skipped.
func (r *PopupRepo) Find(ctx context.Context, q popuplist.Query) (popuplist.Page, error) {
	filter, filterArgs := listFilter(q)
	where, args := filter, slices.Clone(filterArgs)
	col, value := sortColumn(q.Sort.Key, q.After)
	dir, cmp := "ASC", ">"
	if q.Sort.Desc {
		dir, cmp = "DESC", "<"
	}
	if q.After != nil {
		if col == "id" {
			where += ` AND id ` + cmp + ` ?`
			args = append(args, q.After.ID)
		} else {
			where += ` AND (` + col + ` ` + cmp + ` ? OR ` + col + ` = ? AND id ` + cmp + ` ?)`
			args = append(args, value, value, q.After.ID)
		}
	}
	order := `id ` + dir
	if col != "id" {
		order = col + ` ` + dir + `, ` + order
	}
	ps, err := queryPopups(ctx, r.db, `SELECT `+popupColumns+` FROM popup_config WHERE `+where+` ORDER BY `+order+` LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return popuplist.Page{}, err
	}
	// A first page that is not full holds every match: no need to count them again (a search
	// that finds a few popups scans the table once, not twice).
	total := len(ps)
	if q.After != nil || len(ps) == q.Limit {
		if err := r.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_config WHERE `+filter, filterArgs...).Scan(&total); err != nil {
			return popuplist.Page{}, fmt.Errorf("count popups: %w", err)
		}
	}
	return popuplist.Page{Popups: ps, Total: total}, nil
}

// listFilter is the WHERE clause of q's filters (not its page).
func listFilter(q popuplist.Query) (string, []any) {
	var (
		where []string
		args  []any
	)
	if q.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(q.Status))
	}
	if q.State != "" {
		cond, n := stateConds[q.State], 0
		for _, c := range cond {
			n += boolInt(c == '?')
		}
		where = append(where, cond)
		for range n {
			args = append(args, q.Now.UTC())
		}
	}
	if q.Status == "" && q.State != popup.StateArchived && !q.IncludeArchived {
		where = append(where, "status <> 'archived'")
	}
	switch q.Experiment {
	case "":
	case popuplist.ExperimentNone:
		where = append(where, "(experiment IS NULL OR experiment = 'null')")
	case popuplist.ExperimentAny:
		where = append(where, "experiment IS NOT NULL AND experiment <> 'null'")
	default:
		// the experiment's document (popupdoc) holds its status at "status"
		where, args = append(where, "JSON_UNQUOTE(JSON_EXTRACT(experiment, '$.status')) = ?"), append(args, string(q.Experiment))
	}
	if q.Search != "" {
		like := "%" + likeEscaper.Replace(q.Search) + "%"
		texts := `(` + jsonText("title") + ` LIKE ? OR ` + jsonText("content") + ` LIKE ?)`
		textArgs := []any{like, like}
		if !strings.ContainsAny(q.Search, jsonEscaped) {
			// The raw JSON holds the text as it is, so a popup whose content column does not
			// contain the search cannot match: most rows are ruled out without parsing the JSON
			// (BenchmarkFind10k: half the time).
			texts = `(content LIKE ? AND ` + texts + `)`
			textArgs = append([]any{like}, textArgs...)
		}
		cond := `(name LIKE ? OR ` + texts
		args = append(append(args, like), textArgs...)
		if id, err := strconv.ParseInt(q.Search, 10, 64); err == nil && id > 0 {
			cond += ` OR id = ?`
			args = append(args, id)
		}
		where = append(where, cond+`)`)
	}
	if len(where) == 0 {
		return "TRUE", nil
	}
	return strings.Join(where, " AND "), args
}

// jsonEscaped are the characters encoding/json may write escaped in a string (a quote, a
// backslash, <, > and &, control characters; U+2028 and U+2029 too, which a search of them can
// do without the shortcut), so that the raw JSON may not contain them as typed.
const jsonEscaped = "\"\\<>&\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\u2028\u2029"

// jsonText is a string of the content column's JSON, compared like the name column
// (case-insensitively).
func jsonText(key string) string {
	return `JSON_UNQUOTE(JSON_EXTRACT(content, '$.` + key + `')) COLLATE utf8mb4_unicode_ci`
}

// stateConds computes each campaign state from the status and the window at ? (now), as
// popup.Popup.StateAt does: the window is [start_at, end_at).
var stateConds = map[popup.CampaignState]string{
	popup.StateDraft:     `status = 'draft'`,
	popup.StatePaused:    `status = 'paused'`,
	popup.StateArchived:  `status = 'archived'`,
	popup.StateScheduled: `(status = 'active' AND start_at > ?)`,
	popup.StateEnded:     `(status = 'active' AND end_at <= ?)`, /* end_at > start_at, so it has started */
	popup.StateRunning:   `(status = 'active' AND (start_at IS NULL OR start_at <= ?) AND (end_at IS NULL OR end_at > ?))`,
}

// sortColumn is the column of a sort key and the value of pos in it.
func sortColumn(k popuplist.SortKey, pos *popuplist.Position) (col string, value any) {
	if pos == nil {
		pos = &popuplist.Position{}
	}
	switch k {
	case popuplist.SortByUpdatedAt:
		return "updated_at", pos.UpdatedAt.UTC()
	case popuplist.SortByName:
		return "name", pos.Name
	case popuplist.SortByPriority:
		return "priority", pos.Priority
	}
	return "id", pos.ID
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// likeEscaper escapes LIKE's wildcards (backslash is its default escape character).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// History returns every kept revision of popup id, newest first.
func (r *PopupRepo) History(ctx context.Context, id int64) ([]popup.Revision, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT revision, at, actor, actor_role, popup FROM popup_revision WHERE popup_id = ? ORDER BY revision DESC`, id)
	if err != nil {
		return nil, fmt.Errorf("history of popup %d: %w", id, err)
	}
	defer rows.Close()
	out := []popup.Revision{}
	for rows.Next() {
		var (
			rev  popup.Revision
			role sql.NullString
			raw  []byte
		)
		if err := rows.Scan(&rev.Revision, &rev.At, &rev.Actor, &role, &raw); err != nil {
			return nil, fmt.Errorf("history of popup %d: %w", id, err)
		}
		if rev.Popup, err = decodeDoc(raw); err != nil {
			return nil, fmt.Errorf("history of popup %d: %w", id, err)
		}
		rev.At, rev.Role = rev.At.UTC(), roleOf(role)
		out = append(out, rev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of popup %d: %w", id, err)
	}
	if len(out) == 0 {
		if _, err := r.Get(ctx, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Audit returns audit entries newest first (see changelog.AuditQuery).
func (r *PopupRepo) Audit(ctx context.Context, q changelog.AuditQuery) ([]changelog.AuditEntry, error) {
	var (
		where []string
		args  []any
	)
	if q.PopupID > 0 {
		where, args = append(where, "popup_id = ?"), append(args, q.PopupID)
	}
	if q.Actor != "" {
		where, args = append(where, "actor = ?"), append(args, q.Actor)
	}
	if q.Before > 0 {
		where, args = append(where, "id < ?"), append(args, q.Before)
	}
	query := `SELECT id, at, actor, actor_role, action, popup_id, revision, before_state, after_state FROM popup_audit`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := r.db.QueryContext(ctx, query+` ORDER BY id DESC LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer rows.Close()
	out := []changelog.AuditEntry{}
	for rows.Next() {
		var (
			e             changelog.AuditEntry
			role          sql.NullString
			action        string
			before, after []byte
		)
		if err := rows.Scan(&e.ID, &e.At, &e.Actor, &role, &action, &e.PopupID, &e.Revision, &before, &after); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		e.At, e.Role, e.Action = e.At.UTC(), roleOf(role), popup.ChangeKind(action)
		if e.Before, err = decodeNullDoc(before); err != nil {
			return nil, fmt.Errorf("audit entry %d: %w", e.ID, err)
		}
		if e.After, err = decodeNullDoc(after); err != nil {
			return nil, fmt.Errorf("audit entry %d: %w", e.ID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// importBatch bounds the rows of one multi-row write of an import.
const importBatch = 200

// nameKey is a name as the unique index of live names compares it: byte for byte, except that
// trailing spaces do not count (the index's collation pads with spaces).
func nameKey(name string) string { return strings.TrimRight(name, " ") }

// importWrite inserts ps (update=false) or overwrites the rows of their ids (update=true), in
// multi-row statements.
func importWrite(ctx context.Context, tx *sql.Tx, ps []popup.Popup, update bool) error {
	for len(ps) > 0 {
		n := min(len(ps), importBatch)
		batch := ps[:n]
		ps = ps[n:]
		args := make([]any, 0, (len(configCols)+1)*n)
		for _, p := range batch {
			values, err := configValues(p)
			if err != nil {
				return err
			}
			if update {
				args = append(args, p.ID)
			}
			args = append(args, values...)
		}
		width := len(args) / n
		q := `INSERT INTO popup_config (` + configColumns + `) VALUES ` + placeholders(n, width)
		if update {
			// Every id exists (locked by this transaction): the duplicate-key branch always runs.
			q = `INSERT INTO popup_config (id, ` + configColumns + `) VALUES ` + placeholders(n, width) + `
				ON DUPLICATE KEY UPDATE ` + configUpserts + `, updated_at = CURRENT_TIMESTAMP(3), revision = revision + 1`
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}
