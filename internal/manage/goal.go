package manage

import (
	"context"
	"time"

	"popupsvc/internal/popup"
)

// The goal writes (docs/CONTRACT.md §14): create, update and delete a goal, each recorded in the
// goal's history in its transaction. A goal that a running experiment decides its verdict on
// (its primary_goal) cannot be deleted, nor change how it counts (its window or value), while it
// runs: the verdict would change meaning under the experiment.

// GoalStore is what the goal writes need of a store.
type GoalStore interface {
	// InTx runs fn in one transaction: committed when fn returns nil, rolled back otherwise.
	InTx(ctx context.Context, fn func(GoalTx) error) error
	// Goal reads goal key (popup.ErrGoalNotFound); Goals reads them all, by key.
	Goal(ctx context.Context, key string) (popup.Goal, error)
	Goals(ctx context.Context) ([]popup.Goal, error)
	// GoalHistory returns a key's writes, newest first (kept after a delete).
	GoalHistory(ctx context.Context, key string) ([]popup.GoalChange, error)
}

// GoalTx is what a goal write reads and writes in its transaction: persistence only.
type GoalTx interface {
	// DecidingPopups returns the popups whose running experiment has goal key as its primary
	// goal, locking the popups with an experiment until the transaction ends.
	DecidingPopups(ctx context.Context, key string) ([]int64, error)
	// LockGoal reads goal key and locks it (popup.ErrGoalNotFound).
	LockGoal(ctx context.Context, key string) (popup.Goal, error)
	InsertGoal(ctx context.Context, g popup.Goal, now time.Time) (popup.Goal, error)
	UpdateGoal(ctx context.Context, g popup.Goal, now time.Time) (popup.Goal, error)
	DeleteGoal(ctx context.Context, key string) error
	RecordGoal(ctx context.Context, c popup.GoalChange) error
}

// GoalTxFunc adapts a store whose transaction is its own concrete type to GoalStore's InTx, as
// TxFunc does for popup writes.
type GoalTxFunc[T GoalTx] func(ctx context.Context, fn func(T) error) error

// InTx runs fn with the store's transaction.
func (f GoalTxFunc[T]) InTx(ctx context.Context, fn func(GoalTx) error) error {
	return f(ctx, func(tx T) error { return fn(tx) })
}

// Goals makes the admin API's goal writes.
type Goals struct {
	store GoalStore
	now   func() time.Time
}

// NewGoals returns the goal writes over store.
func NewGoals(store GoalStore, now func() time.Time) *Goals { return &Goals{store: store, now: now} }

// Goal, List and History read the store.
func (s *Goals) Goal(ctx context.Context, key string) (popup.Goal, error) {
	return s.store.Goal(ctx, key)
}

func (s *Goals) List(ctx context.Context) ([]popup.Goal, error) { return s.store.Goals(ctx) }

func (s *Goals) History(ctx context.Context, key string) ([]popup.GoalChange, error) {
	return s.store.GoalHistory(ctx, key)
}

// Create stores a new goal (popup.ErrGoalKeyTaken for a key in use).
func (s *Goals) Create(ctx context.Context, actor popup.Actor, g popup.Goal) (popup.Goal, error) {
	if err := g.Validate(); err != nil {
		return popup.Goal{}, err
	}
	var out popup.Goal
	err := s.store.InTx(ctx, func(tx GoalTx) error {
		now := s.now()
		stored, err := tx.InsertGoal(ctx, g, now)
		if err != nil {
			return err
		}
		out = stored
		return tx.RecordGoal(ctx, popup.GoalChange{Key: g.Key, Version: stored.Version, At: now, Actor: actor, Action: popup.GoalCreate, After: &stored})
	})
	return out, err
}

// Update writes g over the goal of its key. ifVersion, when not nil, must hold the stored version
// (popup.ErrGoalVersionMismatch). A write that changes nothing writes nothing; one that changes the
// window or the value of a goal a running experiment decides on is refused (popup.GoalInUse).
func (s *Goals) Update(ctx context.Context, actor popup.Actor, g popup.Goal, ifVersion []int64) (popup.Goal, error) {
	if err := g.Validate(); err != nil {
		return popup.Goal{}, err
	}
	var out popup.Goal
	err := s.store.InTx(ctx, func(tx GoalTx) error {
		deciding, err := tx.DecidingPopups(ctx, g.Key)
		if err != nil {
			return err
		}
		before, err := tx.LockGoal(ctx, g.Key)
		if err != nil {
			return err
		}
		if err := ifVersionHolds(ifVersion, before.Version); err != nil {
			return err
		}
		if before.Name == g.Name && before.Window == g.Window && before.Value == g.Value && popup.SameCap(before.ValueCap, g.ValueCap) {
			out = before
			return nil
		}
		if len(deciding) > 0 && (before.Window != g.Window || before.Value != g.Value) {
			return popup.GoalInUse(deciding)
		}
		g.Version, g.CreatedAt = before.Version, before.CreatedAt
		now := s.now()
		if out, err = tx.UpdateGoal(ctx, g, now); err != nil {
			return err
		}
		return tx.RecordGoal(ctx, popup.GoalChange{Key: g.Key, Version: out.Version, At: now, Actor: actor, Action: popup.GoalUpdate, Before: &before, After: &out})
	})
	return out, err
}

// Delete removes goal key, refused while a running experiment decides on it (popup.GoalInUse).
// The counts made with it are kept, and a goal of the same key created later finds them.
func (s *Goals) Delete(ctx context.Context, actor popup.Actor, key string, ifVersion []int64) (popup.Goal, error) {
	var out popup.Goal
	err := s.store.InTx(ctx, func(tx GoalTx) error {
		// The popups before the goal: a popup write locks its popup, then the goal it names.
		deciding, err := tx.DecidingPopups(ctx, key)
		if err != nil {
			return err
		}
		before, err := tx.LockGoal(ctx, key)
		if err != nil {
			return err
		}
		if err := ifVersionHolds(ifVersion, before.Version); err != nil {
			return err
		}
		if len(deciding) > 0 {
			return popup.GoalInUse(deciding)
		}
		if err := tx.DeleteGoal(ctx, key); err != nil {
			return err
		}
		out = before
		return tx.RecordGoal(ctx, popup.GoalChange{Key: key, Version: before.Version + 1, At: s.now(), Actor: actor, Action: popup.GoalDelete, Before: &before})
	})
	return out, err
}

func ifVersionHolds(ifVersion []int64, stored int64) error {
	if ifVersion == nil {
		return nil
	}
	for _, v := range ifVersion {
		if v == stored {
			return nil
		}
	}
	return popup.ErrGoalVersionMismatch
}

// goalExists refuses an experiment whose primary_goal names a goal the store does not hold; the
// goal is locked in share mode until the write commits, so that it is not deleted under it.
func goalExists(ctx context.Context, tx Tx, e *popup.Experiment) error {
	if e == nil || e.PrimaryGoal == "" {
		return nil
	}
	ok, err := tx.GoalExists(ctx, e.PrimaryGoal)
	if err != nil {
		return err
	}
	if !ok {
		return popup.UnknownGoal("experiment.primary_goal", e.PrimaryGoal)
	}
	return nil
}
