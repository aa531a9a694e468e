package manage

import (
	"context"

	"popupsvc/internal/popup"
)

// Store runs the transaction of a popup write.
type Store interface {
	// InTx runs fn in one transaction: committed when fn returns nil, rolled back otherwise.
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is what a popup write reads and writes inside its transaction. It is persistence only: every
// rule (roles, If-Match, bucket seeds, experiment phases, what counts as no change) is the write
// path's, in this package.
type Tx interface {
	// GetForUpdate reads popup id, archived or not, and locks it until the transaction ends; a
	// popup the store does not hold is popup.ErrNotFound.
	GetForUpdate(ctx context.Context, id int64) (popup.Popup, error)
	// LockByName reads and locks, for each name, the live (not archived) popup of that name as the
	// store's unique index of live names compares names; nil where there is none.
	LockByName(ctx context.Context, names []string) ([]*popup.Popup, error)
	// Revision reads popup id as its revision rev left it; a revision the popup never had is
	// popup.ErrRevisionNotKept.
	Revision(ctx context.Context, id, rev int64) (popup.Popup, error)
	// Insert stores new popups at revision 1 and returns them as stored (id, times, revision), in
	// the order given; a live name that is taken is popup.ErrNameTaken.
	Insert(ctx context.Context, ps []popup.Popup) ([]popup.Popup, error)
	// Overwrite writes each popup over the stored popup of its id and increments its revision,
	// returning them as stored, in the order given. With ifRevision non-nil (one popup only) the
	// write itself is conditional on the stored revision being one of them
	// (popup.ErrRevisionMismatch): the path checked it already, and the condition in the write
	// keeps the write safe whatever checked it before. A missing popup is popup.ErrNotFound, a live
	// name that is taken popup.ErrNameTaken.
	Overwrite(ctx context.Context, ps []popup.Popup, ifRevision []int64) ([]popup.Popup, error)
	// Record adds each change to its popup's history (the after popup, by its revision) and to
	// the audit log.
	Record(ctx context.Context, changes []popup.Change) error
	// BumpVersion increments the config version, by which every instance sees that the config
	// changed.
	BumpVersion(ctx context.Context) error
	// ExistingAudiences returns which of ids are audiences, locking them in share mode until the
	// transaction ends, so that an audience a popup write names is not deleted before it commits.
	ExistingAudiences(ctx context.Context, ids []int64) ([]int64, error)
	// GoalExists reports whether goal key exists, locking it in share mode until the
	// transaction ends, so that a goal an experiment decides on is not deleted before it commits.
	GoalExists(ctx context.Context, key string) (bool, error)
}

// TxFunc adapts a store whose transaction is its own concrete type (mysqlstore.PopupRepo.InTx
// runs a func(*mysqlstore.Tx) error) to Store, so that the store need not import this package.
type TxFunc[T Tx] func(ctx context.Context, fn func(T) error) error

// InTx runs fn with the store's transaction.
func (f TxFunc[T]) InTx(ctx context.Context, fn func(Tx) error) error {
	return f(ctx, func(tx T) error { return fn(tx) })
}
