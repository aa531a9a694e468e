package mysqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

// TestPacingIsPartOfTheSnapshot: the pacing is unset (nil) until written; a write returns the
// pacing it replaced and makes a new config version whose snapshot carries it.
func TestPacingIsPartOfTheSnapshot(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	ctx := context.Background()
	settings, repo := mysqlstore.NewSettingsRepo(db), mysqlstore.NewPopupRepo(db)

	got, err := settings.Pacing(ctx)
	require.NoError(t, err)
	assert.Nil(t, got, "never set")
	v1, _, team, err := repo.Snapshot(ctx)
	require.NoError(t, err)
	assert.Nil(t, team.Pacing)

	want := popup.Pacing{MinGap: 90 * time.Second, DailyCap: 3}
	old, err := settings.SetPacing(ctx, "alice", want)
	require.NoError(t, err)
	assert.Nil(t, old)
	v2, _, team, err := repo.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, v1+1, v2, "a pacing change is a config change")
	assert.Equal(t, &want, team.Pacing)

	old, err = settings.SetPacing(ctx, "bob", popup.Pacing{})
	require.NoError(t, err)
	assert.Equal(t, &want, old)
	got, err = settings.Pacing(ctx)
	require.NoError(t, err)
	assert.Equal(t, &popup.Pacing{}, got, "set to none is set: the default no longer applies")
}
