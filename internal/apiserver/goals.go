package apiserver

import (
	"context"

	"popupsvc/internal/health"
	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
)

// gatedGoalStore is the goal store (manage.GoalStore) behind the MySQL gate, as the audiences'.
type gatedGoalStore struct {
	repo *mysqlstore.GoalRepo
	dep  *health.Dep
}

func (g gatedGoalStore) InTx(ctx context.Context, fn func(manage.GoalTx) error) error {
	_, err := gate(g.dep, func() (struct{}, error) {
		return struct{}{}, manage.GoalTxFunc[*mysqlstore.Tx](g.repo.InTx).InTx(ctx, fn)
	})
	return err
}

func (g gatedGoalStore) Goal(ctx context.Context, key string) (popup.Goal, error) {
	return gate(g.dep, func() (popup.Goal, error) { return g.repo.Goal(ctx, key) })
}

func (g gatedGoalStore) Goals(ctx context.Context) ([]popup.Goal, error) {
	return gate(g.dep, func() ([]popup.Goal, error) { return g.repo.Goals(ctx) })
}

func (g gatedGoalStore) GoalHistory(ctx context.Context, key string) ([]popup.GoalChange, error) {
	return gate(g.dep, func() ([]popup.GoalChange, error) { return g.repo.GoalHistory(ctx, key) })
}
