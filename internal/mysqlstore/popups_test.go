package mysqlstore_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
	"popupsvc/internal/testenv"
)

func newPopup(t *testing.T, name string) popup.Popup {
	t.Helper()
	p, err := popup.Input{Name: name}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	return p
}

func TestEveryPopupWriteIncrementsItsRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))

	created, err := repo.Create(ctx, as("tester"), newPopup(t, "a"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.Revision)
	updated, changed, err := repo.Update(ctx, as("tester"), created.ID, newPopup(t, "b"), popup.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, int64(2), updated.Revision)
	archived, err := repo.Archive(ctx, as("tester"), created.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(3), archived.Revision)
	got, err := repo.Get(ctx, created.ID)
	require.NoError(t, err)
	assert.Equal(t, archived, got)
}

func TestConditionalWritesCheckTheRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))
	p, err := repo.Create(ctx, as("tester"), newPopup(t, "a"))
	require.NoError(t, err)
	version, err := repo.Version(ctx)
	require.NoError(t, err)

	// Two operators read revision 1; the first write wins.
	first, _, err := repo.Update(ctx, as("tester"), p.ID, newPopup(t, "first"), popup.UpdateOptions{IfRevision: []int64{1}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), first.Revision)
	_, _, err = repo.Update(ctx, as("tester"), p.ID, newPopup(t, "second"), popup.UpdateOptions{IfRevision: []int64{1}})
	require.ErrorIs(t, err, popup.ErrRevisionMismatch)
	_, err = repo.Archive(ctx, as("tester"), p.ID, []int64{1})
	require.ErrorIs(t, err, popup.ErrRevisionMismatch)
	_, _, err = repo.Update(ctx, as("tester"), p.ID, newPopup(t, "none can match"), popup.UpdateOptions{IfRevision: []int64{}})
	require.ErrorIs(t, err, popup.ErrRevisionMismatch)

	got, err := repo.Get(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, "first", got.Name, "the refused writes changed nothing")
	assert.Equal(t, int64(2), got.Revision)
	after, err := repo.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, version+1, after, "a refused write does not bump the config version")

	listed, _, err := repo.Update(ctx, as("tester"), p.ID, newPopup(t, "third"), popup.UpdateOptions{IfRevision: []int64{1, 2}})
	require.NoError(t, err, "any revision of the list matches")
	assert.Equal(t, int64(3), listed.Revision)
	_, _, err = repo.Update(ctx, as("tester"), p.ID+100, newPopup(t, "x"), popup.UpdateOptions{IfRevision: []int64{1}})
	require.ErrorIs(t, err, popup.ErrNotFound, "a missing popup is not found, whatever the condition")
}

func TestConcurrentConditionalUpdatesOfOneRevisionLetExactlyOneWin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(t))
	p, err := repo.Create(ctx, as("tester"), newPopup(t, "a"))
	require.NoError(t, err)

	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = repo.Update(ctx, as("tester"), p.ID, newPopup(t, "writer"), popup.UpdateOptions{IfRevision: []int64{p.Revision}})
		}()
	}
	wg.Wait()

	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, popup.ErrRevisionMismatch)
	}
	assert.Equal(t, 1, won)
	got, err := repo.Get(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Revision)
}

// TestPopupRowCarriesEveryField: a popup with every field set reads back from its popup_config
// row as it was written (the id, revision and times are the store's, and so are the experiment's
// status, phase and salt: a new experiment is a draft at phase 1).
func TestPopupRowCarriesEveryField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	repo := newRepo(db)
	want := popuptest.Full()
	want.Experiment = popuptest.FullExperiment()
	// The audiences it targets must exist: a fresh database numbers them from 1.
	audiences := manage.NewAudiences(audienceStore{mysqlstore.NewAudienceRepo(db)}, nil, 1<<30, time.Now)
	for i := range slices.Max(want.Targeting.Audiences.IDs()) {
		_, err := audiences.Create(ctx, as("alice"), popup.AudienceMeta{Name: "audience-" + strconv.Itoa(int(i))})
		require.NoError(t, err)
	}
	createGoal(t, db, popuptest.FullGoal()) // and the goal its experiment decides on
	stored, err := repo.Create(ctx, as("alice"), want)
	require.NoError(t, err)
	got, err := repo.Get(ctx, stored.ID)
	require.NoError(t, err)
	want.ID, want.Revision, want.CreatedAt, want.UpdatedAt = got.ID, got.Revision, got.CreatedAt, got.UpdatedAt
	e := got.Experiment
	require.NotNil(t, e)
	assert.Equal(t, popup.ExperimentDraft, e.Status)
	assert.Equal(t, 1, e.Phase)
	assert.Len(t, e.Salt, 16)
	want.Experiment.Status, want.Experiment.Phase, want.Experiment.Salt = e.Status, e.Phase, e.Salt
	want.Experiment.PhaseStartedAt, want.Experiment.ConcludedVariant = nil, ""
	assert.Equal(t, want, got)
}
