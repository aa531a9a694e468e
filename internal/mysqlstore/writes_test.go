package mysqlstore_test

import (
	"database/sql"
	"testing"
	"time"

	"popupsvc/internal/manage"
	"popupsvc/internal/manage/managetest"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

// writableRepo is the popup repository with the write use case over its transactions, as
// popup-api wires them: the storage tests write through manage.Service, the one path of popup
// writes, and read through the repository.
type writableRepo struct {
	*mysqlstore.PopupRepo
	*manage.Service
	// Now is the writes' clock (when an experiment's phase starts); time.Now unless a test sets it.
	Now func() time.Time
}

func newRepo(db *sql.DB) *writableRepo {
	r := &writableRepo{PopupRepo: mysqlstore.NewPopupRepo(db), Now: time.Now}
	r.Service = manage.New(manage.TxFunc[*mysqlstore.Tx](r.PopupRepo.InTx), func() time.Time { return r.Now() })
	return r
}

func TestTxConformsToTheWriteStore(t *testing.T) {
	t.Parallel()
	managetest.Conformance(t, func(t *testing.T) manage.Store {
		return manage.TxFunc[*mysqlstore.Tx](mysqlstore.NewPopupRepo(testenv.MySQL(t)).InTx)
	})
}
