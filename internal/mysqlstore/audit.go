package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"popupsvc/internal/changelog"
	"popupsvc/internal/popup"
)

// ChangeLog reads the audit log's changes (GET /admin/v1/audit/changes?resource=): the popups'
// and their experiments' (popup_audit), the audiences' (audience_changes), the goals'
// (popup_goal_change), the settings' (popup_setting_change), the holdout's phases
// (popup_holdout_phase, each phase a start and, once it ended, an end), the operators'
// (popup_operator_change) and the privacy requests' (privacy_request_change).
type ChangeLog struct{ db *sql.DB }

// NewChangeLog returns the change log over db.
func NewChangeLog(db *sql.DB) *ChangeLog { return &ChangeLog{db: db} }

// changeSource is how one table resource's changes are read: the columns Changes scans (id, at,
// actor, role, action, subject, name, version, added, removed, size, before, after, popup id)
// from its table aliased c, the expression of the subject's name the name filter matches (NULL:
// none), and the condition that keeps the resource's rows of a shared table.
type changeSource struct {
	columns, name, where string
}

// experimentActions is the SQL list of ChangeExperiments' actions.
var experimentActions = func() string {
	quoted := make([]string, len(changelog.ExperimentChanges))
	for i, k := range changelog.ExperimentChanges {
		quoted[i] = "'" + string(k) + "'"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}()

const popupAuditName = `JSON_VALUE(COALESCE(c.after_state, c.before_state), '$.name')`

var changeSources = map[changelog.ChangeResource]changeSource{
	changelog.ChangePopups: {
		columns: `c.id, c.at, c.actor, c.actor_role, c.action, CAST(c.popup_id AS CHAR), ` + popupAuditName + `, c.revision, 0, 0, 0,
			NULL, NULL, c.popup_id FROM popup_audit c`,
		name: popupAuditName, where: `c.action NOT IN ` + experimentActions},
	changelog.ChangeExperiments: {
		columns: `c.id, c.at, c.actor, c.actor_role, c.action, CAST(c.popup_id AS CHAR), ` + popupAuditName + `, c.revision, 0, 0, 0,
			NULL, IF(c.action = '` + string(popup.ChangeExperimentConclude) + `', JSON_VALUE(c.after_state, '$.experiment.concluded_variant'), NULL),
			c.popup_id FROM popup_audit c`,
		name: popupAuditName, where: `c.action IN ` + experimentActions},
	changelog.ChangeAudiences: {
		columns: `c.id, c.at, c.actor, c.actor_role, c.action, CAST(c.audience_id AS CHAR), a.name, c.version, c.added, c.removed, c.size,
			NULL, NULL, NULL FROM audience_changes c LEFT JOIN audiences a ON a.id = c.audience_id`,
		name: `a.name`},
	changelog.ChangeGoals: {
		columns: `c.id, c.at, c.actor, c.actor_role, c.action, c.goal_key, ` + goalChangeName + `, c.version, 0, 0, 0, NULL, NULL, NULL
			FROM popup_goal_change c`,
		name: goalChangeName},
	changelog.ChangeSettings: {
		columns: `c.id, c.at, c.actor, NULL, 'update', c.name, c.name, 0, 0, 0, 0, c.old_value, c.new_value, NULL FROM popup_setting_change c`,
		name:    `c.name`},
	changelog.ChangeOperators: {
		columns: `c.id, c.at, c.actor, NULL, c.action, c.name, c.name, 0, 0, 0, 0, c.old_role, c.new_role, NULL FROM popup_operator_change c`,
		name:    `c.name`},
	changelog.ChangePrivacy: {
		columns: `c.id, c.at, c.actor, c.actor_role, c.action, COALESCE(c.erasure_id, ''), NULL, 0, 0, COALESCE(c.removed, 0), 0, NULL, NULL, NULL
			FROM privacy_request_change c`,
		name: `NULL`},
}

// goalChangeName is a goal change's goal's name as the change left it (as it was, for a delete).
const goalChangeName = `COALESCE(JSON_VALUE(c.after_state, '$.name'), JSON_VALUE(c.before_state, '$.name'))`

// likeContains is the LIKE pattern of a case-insensitive substring s.
func likeContains(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// Changes returns q's changes, newest first.
func (r *ChangeLog) Changes(ctx context.Context, q changelog.ResourceChangeQuery) ([]changelog.ResourceChange, error) {
	if q.Resource == changelog.ChangeHoldout {
		return r.holdoutChanges(ctx, q)
	}
	src, ok := changeSources[q.Resource]
	if !ok {
		return nil, fmt.Errorf("changes of %q: not a resource of the change log", q.Resource)
	}
	where := []string{`(? = '' OR c.actor = ?)`, `(? = '' OR LOWER(CONVERT(` + src.name + ` USING utf8mb4)) LIKE ?)`, `(? = 0 OR c.id < ?)`}
	args := []any{q.Actor, q.Actor, q.Name, likeContains(q.Name), q.Before, q.Before}
	if src.where != "" {
		where = append(where, src.where)
	}
	order := ` ORDER BY c.id DESC`
	if q.ByTime {
		order = ` ORDER BY c.at DESC, c.id DESC`
		if !q.Until.IsZero() {
			where = append(where, `(c.at < ? OR (c.at = ? AND c.id < ?))`)
			args = append(args, toDB(q.Until), toDB(q.Until), q.UntilID)
		}
	}
	rows, err := r.db.QueryContext(ctx, `SELECT `+src.columns+` WHERE `+strings.Join(where, " AND ")+order+` LIMIT ?`,
		append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("changes of %s: %w", q.Resource, err)
	}
	defer rows.Close()
	out := []changelog.ResourceChange{}
	for rows.Next() {
		c := changelog.ResourceChange{Resource: q.Resource}
		var (
			role, name, before, after sql.NullString
			popupID                   sql.NullInt64
		)
		if err := rows.Scan(&c.ID, &c.At, &c.Actor.Name, &role, &c.Action, &c.Subject, &name, &c.Version, &c.Added, &c.Removed, &c.Size,
			&before, &after, &popupID); err != nil {
			return nil, fmt.Errorf("changes of %s: %w", q.Resource, err)
		}
		c.At, c.Actor.Role, c.Name, c.PopupID = c.At.UTC(), roleOf(role), name.String, popupID.Int64
		c.Before, c.After = nullString(before), nullString(after)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("changes of %s: %w", q.Resource, err)
	}
	return out, nil
}

// holdoutChanges are the holdout's phases as changes: phase n's start has id 2n, its end 2n+1.
// A phase has no name: a name filter matches none.
func (r *ChangeLog) holdoutChanges(ctx context.Context, q changelog.ResourceChangeQuery) ([]changelog.ResourceChange, error) {
	if q.Name != "" {
		return []changelog.ResourceChange{}, nil
	}
	rows, err := r.db.QueryContext(ctx, `SELECT `+holdoutColumns+` FROM popup_holdout_phase ORDER BY phase DESC`)
	if err != nil {
		return nil, fmt.Errorf("changes of the holdout: %w", err)
	}
	defer rows.Close()
	var all []changelog.ResourceChange
	for rows.Next() {
		p, err := scanHoldout(rows)
		if err != nil {
			return nil, fmt.Errorf("changes of the holdout: %w", err)
		}
		phase, percent := strconv.Itoa(p.Phase), strconv.Itoa(p.Percent)
		if !p.EndedAt.IsZero() {
			all = append(all, changelog.ResourceChange{ID: int64(2*p.Phase + 1), Resource: changelog.ChangeHoldout, At: p.EndedAt,
				Actor: popup.Actor{Name: p.EndedBy}, Action: "end", Subject: phase, Before: &percent})
		}
		all = append(all, changelog.ResourceChange{ID: int64(2 * p.Phase), Resource: changelog.ChangeHoldout, At: p.StartedAt,
			Actor: popup.Actor{Name: p.StartedBy}, Action: "start", Subject: phase, After: &percent})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("changes of the holdout: %w", err)
	}
	out := slices.DeleteFunc(all, func(c changelog.ResourceChange) bool {
		return (q.Actor != "" && c.Actor.Name != q.Actor) || (q.Before > 0 && c.ID >= q.Before) ||
			(q.ByTime && !q.Until.IsZero() && !(c.At.Before(q.Until) || (c.At.Equal(q.Until) && c.ID < q.UntilID)))
	})
	if q.ByTime {
		slices.SortStableFunc(out, func(x, y changelog.ResourceChange) int {
			return cmp.Or(y.At.Compare(x.At), cmp.Compare(y.ID, x.ID))
		})
	}
	if out == nil {
		out = []changelog.ResourceChange{}
	}
	return out[:min(len(out), q.Limit)], nil
}

func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}
