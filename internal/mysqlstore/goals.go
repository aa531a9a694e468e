package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"popupsvc/internal/popup"
	"popupsvc/internal/popupdoc"
)

// GoalRepo reads and writes goals (popup_goal) and their history (popup_goal_change),
// docs/CONTRACT.md §14. Its writes run in a *Tx (InTx) that manage.Goals drives.
type GoalRepo struct{ db *sql.DB }

// NewGoalRepo returns a goal store over db.
func NewGoalRepo(db *sql.DB) *GoalRepo { return &GoalRepo{db: db} }

// InTx runs fn in one transaction, committed when fn returns nil.
func (r *GoalRepo) InTx(ctx context.Context, fn func(*Tx) error) error {
	return (&PopupRepo{db: r.db}).InTx(ctx, fn)
}

const goalColumns = `goal_key, name, window_hours, value_kind, value_cap, version, created_at, updated_at`

func scanGoal(s scanner) (popup.Goal, error) {
	var (
		g     popup.Goal
		hours int64
		value string
		cap   sql.NullFloat64
	)
	if err := s.Scan(&g.Key, &g.Name, &hours, &value, &cap, &g.Version, &g.CreatedAt, &g.UpdatedAt); err != nil {
		return popup.Goal{}, err
	}
	if cap.Valid {
		g.ValueCap = &cap.Float64
	}
	g.Window, g.Value, g.CreatedAt, g.UpdatedAt = time.Duration(hours)*time.Hour, popup.GoalValue(value), g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g, nil
}

func getGoal(ctx context.Context, q rowQuerier, key, lock string) (popup.Goal, error) {
	g, err := scanGoal(q.QueryRowContext(ctx, `SELECT `+goalColumns+` FROM popup_goal WHERE goal_key = ?`+lock, key))
	if errors.Is(err, sql.ErrNoRows) {
		return popup.Goal{}, fmt.Errorf("goal %q: %w", key, popup.ErrGoalNotFound)
	}
	if err != nil {
		return popup.Goal{}, fmt.Errorf("read goal %q: %w", key, err)
	}
	return g, nil
}

// Goal reads goal key (popup.ErrGoalNotFound).
func (r *GoalRepo) Goal(ctx context.Context, key string) (popup.Goal, error) {
	return getGoal(ctx, r.db, key, "")
}

// Goals reads every goal, by key.
func (r *GoalRepo) Goals(ctx context.Context) ([]popup.Goal, error) {
	return listGoals(ctx, r.db)
}

func listGoals(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) ([]popup.Goal, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+goalColumns+` FROM popup_goal ORDER BY goal_key`)
	if err != nil {
		return nil, fmt.Errorf("list goals: %w", err)
	}
	defer rows.Close()
	out := []popup.Goal{}
	for rows.Next() {
		g, err := scanGoal(rows)
		if err != nil {
			return nil, fmt.Errorf("list goals: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// GoalHistory returns goal key's writes, newest first, including those of a deleted goal of that
// key (popup.ErrGoalNotFound when there are none).
func (r *GoalRepo) GoalHistory(ctx context.Context, key string) ([]popup.GoalChange, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT version, at, actor, actor_role, action, before_state, after_state
		FROM popup_goal_change WHERE goal_key = ? ORDER BY id DESC`, key)
	if err != nil {
		return nil, fmt.Errorf("goal %q history: %w", key, err)
	}
	defer rows.Close()
	out := []popup.GoalChange{}
	for rows.Next() {
		var (
			c             = popup.GoalChange{Key: key}
			role          sql.NullString
			action        string
			before, after sql.NullString
		)
		if err := rows.Scan(&c.Version, &c.At, &c.Actor.Name, &role, &action, &before, &after); err != nil {
			return nil, fmt.Errorf("goal %q history: %w", key, err)
		}
		c.At, c.Actor.Role, c.Action = c.At.UTC(), roleOf(role), popup.GoalAction(action)
		if c.Before, err = goalState(before); err == nil {
			c.After, err = goalState(after)
		}
		if err != nil {
			return nil, fmt.Errorf("goal %q history: %w", key, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("goal %q history: %w", key, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("goal %q: %w", key, popup.ErrGoalNotFound)
	}
	return out, nil
}

func goalState(s sql.NullString) (*popup.Goal, error) {
	if !s.Valid {
		return nil, nil
	}
	var d *popupdoc.Goal
	if err := json.Unmarshal([]byte(s.String), &d); err != nil {
		return nil, err
	}
	return d.Popup(), nil
}

func goalColumn(g *popup.Goal) (any, error) {
	if g == nil {
		return nil, nil
	}
	b, err := json.Marshal(popupdoc.GoalOf(g))
	return string(b), err
}

// LockGoal reads goal key and locks it until the transaction ends (popup.ErrGoalNotFound).
func (t *Tx) LockGoal(ctx context.Context, key string) (popup.Goal, error) {
	return getGoal(ctx, t.tx, key, " FOR UPDATE")
}

// InsertGoal stores a new goal at version 1 (popup.ErrGoalKeyTaken).
func (t *Tx) InsertGoal(ctx context.Context, g popup.Goal, now time.Time) (popup.Goal, error) {
	g.Version, g.CreatedAt, g.UpdatedAt = 1, toDB(now), toDB(now)
	_, err := t.tx.ExecContext(ctx, `INSERT INTO popup_goal (`+goalColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		g.Key, g.Name, int64(g.Window/time.Hour), string(g.Value), g.ValueCap, g.Version, g.CreatedAt, g.UpdatedAt)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return popup.Goal{}, fmt.Errorf("%w: %s", popup.ErrGoalKeyTaken, me.Message)
	}
	if err != nil {
		return popup.Goal{}, fmt.Errorf("insert goal %q: %w", g.Key, err)
	}
	return g, nil
}

// UpdateGoal writes g over the stored goal of its key at the next version and returns it as
// stored; the caller holds its lock (LockGoal).
func (t *Tx) UpdateGoal(ctx context.Context, g popup.Goal, now time.Time) (popup.Goal, error) {
	g.Version++
	g.UpdatedAt = toDB(now)
	if _, err := t.tx.ExecContext(ctx, `UPDATE popup_goal SET name = ?, window_hours = ?, value_kind = ?, value_cap = ?, version = ?, updated_at = ?
		WHERE goal_key = ?`, g.Name, int64(g.Window/time.Hour), string(g.Value), g.ValueCap, g.Version, g.UpdatedAt, g.Key); err != nil {
		return popup.Goal{}, fmt.Errorf("update goal %q: %w", g.Key, err)
	}
	return g, nil
}

// DeleteGoal removes goal key; its history and the counts made with it stay.
func (t *Tx) DeleteGoal(ctx context.Context, key string) error {
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM popup_goal WHERE goal_key = ?`, key); err != nil {
		return fmt.Errorf("delete goal %q: %w", key, err)
	}
	return nil
}

// RecordGoal adds a write to the goal's history.
func (t *Tx) RecordGoal(ctx context.Context, c popup.GoalChange) error {
	before, err := goalColumn(c.Before)
	if err != nil {
		return err
	}
	after, err := goalColumn(c.After)
	if err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO popup_goal_change (goal_key, version, at, actor, actor_role, action, before_state, after_state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, c.Key, c.Version, toDB(c.At), c.Actor.Name, roleColumn(c.Actor.Role), string(c.Action), before, after); err != nil {
		return fmt.Errorf("record goal %q: %w", c.Key, err)
	}
	return nil
}

// DecidingPopups returns the popups, by id, whose running experiment names goal key as its
// primary goal. It locks every popup with an experiment in share mode until the transaction
// ends, so that none starts deciding on the goal before a delete of it commits.
func (t *Tx) DecidingPopups(ctx context.Context, key string) ([]int64, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT id, experiment FROM popup_config WHERE experiment IS NOT NULL ORDER BY id LOCK IN SHARE MODE`)
	if err != nil {
		return nil, fmt.Errorf("popups deciding on goal %q: %w", key, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var (
			id  int64
			doc string
		)
		if err := rows.Scan(&id, &doc); err != nil {
			return nil, err
		}
		var e popupdoc.Experiment
		if err := json.Unmarshal([]byte(doc), &e); err != nil {
			return nil, fmt.Errorf("popup %d experiment: %w", id, err)
		}
		if e.Status == string(popup.ExperimentRunning) && e.PrimaryGoal == key {
			out = append(out, id)
		}
	}
	return out, rows.Err()
}

// GoalExists reports whether goal key exists, locking its row in share mode until the
// transaction ends: a goal a popup write names cannot be deleted before it commits.
func (t *Tx) GoalExists(ctx context.Context, key string) (bool, error) {
	var one int
	err := t.tx.QueryRowContext(ctx, `SELECT 1 FROM popup_goal WHERE goal_key = ? LOCK IN SHARE MODE`, key).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("goal %q: %w", key, err)
	}
	return true, nil
}
