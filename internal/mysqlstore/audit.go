package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"

	"popupsvc/internal/popup"
)

// ChangeLog reads the audit log's changes besides popups' (GET /admin/v1/audit?resource=): the
// audiences' (audience_changes), the goals' (popup_goal_change), the settings'
// (popup_setting_change) and the holdout's phases (popup_holdout_phase), each phase a start and,
// once it ended, an end.
type ChangeLog struct{ db *sql.DB }

// NewChangeLog returns the change log over db.
func NewChangeLog(db *sql.DB) *ChangeLog { return &ChangeLog{db: db} }

// changeQueries are the statements of each table resource: the columns Changes scans, newest
// first, filtered by actor (” for any) and by id below a cursor (0 for none).
var changeQueries = map[popup.ChangeResource]string{
	popup.ChangeAudiences: `SELECT id, at, actor, actor_role, action, CAST(audience_id AS CHAR), version, added, removed, size, NULL, NULL
		FROM audience_changes`,
	popup.ChangeGoals: `SELECT id, at, actor, actor_role, action, goal_key, version, 0, 0, 0, NULL, NULL
		FROM popup_goal_change`,
	popup.ChangeSettings: `SELECT id, at, actor, NULL, 'update', name, 0, 0, 0, 0, old_value, new_value
		FROM popup_setting_change`,
}

// Changes returns q's changes, newest first.
func (r *ChangeLog) Changes(ctx context.Context, q popup.ResourceChangeQuery) ([]popup.ResourceChange, error) {
	if q.Resource == popup.ChangeHoldout {
		return r.holdoutChanges(ctx, q)
	}
	stmt, ok := changeQueries[q.Resource]
	if !ok {
		return nil, fmt.Errorf("changes of %q: not a resource of the change log", q.Resource)
	}
	rows, err := r.db.QueryContext(ctx, stmt+` WHERE (? = '' OR actor = ?) AND (? = 0 OR id < ?) ORDER BY id DESC LIMIT ?`,
		q.Actor, q.Actor, q.Before, q.Before, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("changes of %s: %w", q.Resource, err)
	}
	defer rows.Close()
	out := []popup.ResourceChange{}
	for rows.Next() {
		c := popup.ResourceChange{Resource: q.Resource}
		var role, before, after sql.NullString
		if err := rows.Scan(&c.ID, &c.At, &c.Actor.Name, &role, &c.Action, &c.Subject, &c.Version, &c.Added, &c.Removed, &c.Size,
			&before, &after); err != nil {
			return nil, fmt.Errorf("changes of %s: %w", q.Resource, err)
		}
		c.At, c.Actor.Role = c.At.UTC(), roleOf(role)
		c.Before, c.After = nullString(before), nullString(after)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("changes of %s: %w", q.Resource, err)
	}
	return out, nil
}

// holdoutChanges are the holdout's phases as changes: phase n's start has id 2n, its end 2n+1.
func (r *ChangeLog) holdoutChanges(ctx context.Context, q popup.ResourceChangeQuery) ([]popup.ResourceChange, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+holdoutColumns+` FROM popup_holdout_phase ORDER BY phase DESC`)
	if err != nil {
		return nil, fmt.Errorf("changes of the holdout: %w", err)
	}
	defer rows.Close()
	var all []popup.ResourceChange
	for rows.Next() {
		p, err := scanHoldout(rows)
		if err != nil {
			return nil, fmt.Errorf("changes of the holdout: %w", err)
		}
		phase, percent := strconv.Itoa(p.Phase), strconv.Itoa(p.Percent)
		if !p.EndedAt.IsZero() {
			all = append(all, popup.ResourceChange{ID: int64(2*p.Phase + 1), Resource: popup.ChangeHoldout, At: p.EndedAt,
				Actor: popup.Actor{Name: p.EndedBy}, Action: "end", Subject: phase, Before: &percent})
		}
		all = append(all, popup.ResourceChange{ID: int64(2 * p.Phase), Resource: popup.ChangeHoldout, At: p.StartedAt,
			Actor: popup.Actor{Name: p.StartedBy}, Action: "start", Subject: phase, After: &percent})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("changes of the holdout: %w", err)
	}
	out := slices.DeleteFunc(all, func(c popup.ResourceChange) bool {
		return (q.Actor != "" && c.Actor.Name != q.Actor) || (q.Before > 0 && c.ID >= q.Before)
	})
	if out == nil {
		out = []popup.ResourceChange{}
	}
	return out[:min(len(out), q.Limit)], nil
}

func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}
