package apiserver

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"popupsvc/internal/decide"
	"popupsvc/internal/redisstore"

	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
)

// goalStore is the goal repository as the goal use case takes it (manage.GoalStore): its
// transaction in the use case's terms.
type goalStore struct{ *mysqlstore.GoalRepo }

func (s goalStore) InTx(ctx context.Context, fn func(manage.GoalTx) error) error {
	return manage.GoalTxFunc[*mysqlstore.Tx](s.GoalRepo.InTx).InTx(ctx, fn)
}

// goalSet is the goals conversions may name, as this instance's ingest knows them
// (decide.GoalSet): the keys the admin API publishes to Redis after every goal write
// (redisstore.GoalCatalog), read again every goalPoll, so that a goal written on any instance
// is accepted by every instance within about that long. A Redis without them (fresh, flushed) is
// filled from MySQL. Until its first load it answers decide.ErrUnavailable (a 503).
type goalSet struct {
	keys    atomic.Pointer[map[string]bool]
	catalog *redisstore.GoalCatalog
	source  goalStore
	log     *slog.Logger
}

// goalPoll is how often an instance reads the published goals.
const goalPoll = time.Second

func (g *goalSet) HasGoal(key string) (bool, error) {
	m := g.keys.Load()
	if m == nil {
		return false, decide.ErrUnavailable
	}
	return (*m)[key], nil
}

func (g *goalSet) set(keys []string) {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	g.keys.Store(&m)
}

// publish reads the goals from MySQL, publishes their keys and holds them: after a goal write
// (goals.API.GoalsChanged), and when Redis has none.
func (g *goalSet) publish(ctx context.Context) error {
	goals, err := g.source.Goals(ctx)
	if err != nil {
		return err
	}
	keys := make([]string, len(goals))
	for i, goal := range goals {
		keys[i] = goal.Key
	}
	g.set(keys)
	return g.catalog.Publish(ctx, goals)
}

func (g *goalSet) refresh(ctx context.Context) error {
	keys, found, err := g.catalog.Load(ctx)
	switch {
	case err != nil:
		return err
	case !found:
		return g.publish(ctx)
	}
	g.set(keys)
	return nil
}

// Run refreshes the goals every goalPoll until ctx ends; a failure keeps the goals held.
func (g *goalSet) Run(ctx context.Context) error {
	t := time.NewTicker(goalPoll)
	defer t.Stop()
	for {
		if err := g.refresh(ctx); err != nil && ctx.Err() == nil {
			g.log.Debug("refresh goals; keeping those held", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
