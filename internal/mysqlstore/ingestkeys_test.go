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

// An ingest key on MariaDB: stored as its hash (the secret is nowhere in the table), active until
// revoked, the revocation recorded with its operator and kept; a second revocation changes
// nothing.
func TestIngestKeysAreStoredHashedAndRevoked(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t)
	ctx := context.Background()
	repo := mysqlstore.NewIngestKeyRepo(db)
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ada := popup.Actor{Name: "ada", Role: popup.RoleAdmin}

	secret, prefix, hash := popup.NewIngestKeySecret()
	assert.True(t, popup.LooksLikeIngestKey(secret))
	k, err := repo.CreateIngestKey(ctx, "orders backend", prefix, hash, ada, t0)
	require.NoError(t, err)
	assert.Equal(t, "orders backend", k.Name)
	assert.Equal(t, prefix, k.Prefix)
	assert.Equal(t, "ada", k.CreatedBy)
	assert.Equal(t, popup.RoleAdmin, k.CreatedRole)
	assert.Nil(t, k.RevokedAt)
	traces, err := testenv.TraceRows(ctx, db, secret)
	require.NoError(t, err)
	assert.Empty(t, traces, "the secret is stored nowhere")

	active, err := repo.ActiveIngestKey(ctx, popup.HashIngestKey(secret))
	require.NoError(t, err)
	assert.True(t, active)
	other, _, _ := popup.NewIngestKeySecret()
	active, err = repo.ActiveIngestKey(ctx, popup.HashIngestKey(other))
	require.NoError(t, err)
	assert.False(t, active, "a key never created")

	revoked, err := repo.RevokeIngestKey(ctx, k.ID, ada, t0.Add(time.Hour))
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	assert.Equal(t, t0.Add(time.Hour), *revoked.RevokedAt)
	assert.Equal(t, "ada", revoked.RevokedBy)
	active, err = repo.ActiveIngestKey(ctx, hash)
	require.NoError(t, err)
	assert.False(t, active, "revoked")
	again, err := repo.RevokeIngestKey(ctx, k.ID, popup.Actor{Name: "bob", Role: popup.RoleAdmin}, t0.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, revoked, again, "the first revocation stays recorded")

	list, err := repo.IngestKeys(ctx)
	require.NoError(t, err)
	assert.Equal(t, []popup.IngestKey{revoked}, list)
	_, err = repo.RevokeIngestKey(ctx, k.ID+1, ada, t0)
	assert.ErrorIs(t, err, popup.ErrIngestKeyNotFound)
}
