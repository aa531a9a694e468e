package mysqlstore_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/manage"
	"popupsvc/internal/manage/managetest"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
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
	managetest.Conformance(t, func(t *testing.T) (manage.Store, func(*testing.T) int64) {
		db := testenv.MySQL(t)
		audiences := manage.NewAudiences(audienceStore{mysqlstore.NewAudienceRepo(db)}, nil, 1<<30, time.Now)
		return manage.TxFunc[*mysqlstore.Tx](mysqlstore.NewPopupRepo(db).InTx), func(t *testing.T) int64 {
			a, err := audiences.Create(context.Background(), popup.Actor{Name: "t", Role: popup.RoleAdmin}, popup.AudienceMeta{Name: "a" + testenv.Suffix(t)})
			require.NoError(t, err)
			return a.ID
		}
	})
	managetest.PrimaryGoalConformance(t, func(t *testing.T) (manage.Store, func(*testing.T, string)) {
		db := testenv.MySQL(t)
		return manage.TxFunc[*mysqlstore.Tx](mysqlstore.NewPopupRepo(db).InTx), func(t *testing.T, key string) {
			require.NoError(t, mysqlstore.NewGoalRepo(db).InTx(context.Background(), func(tx *mysqlstore.Tx) error {
				_, err := tx.InsertGoal(context.Background(), popup.Goal{Key: key, Name: key, Window: 72 * time.Hour, Value: popup.GoalValueNone}, time.Now())
				return err
			}))
		}
	})
}

// audienceStore is the audience repository as the audience writes take it (manage.AudienceStore),
// as popup-api wires it.
type audienceStore struct{ *mysqlstore.AudienceRepo }

func (s audienceStore) InTx(ctx context.Context, fn func(manage.AudienceTx) error) error {
	return manage.AudienceTxFunc[*mysqlstore.Tx](s.AudienceRepo.InTx).InTx(ctx, fn)
}
