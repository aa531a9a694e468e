package manage_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/manage"
	"popupsvc/internal/manage/managetest"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
)

// TestWhereFieldsTravelThroughTheWrites: placements, a trigger and rules are content like any
// other: an update that drops them is a change, a rollback brings them back from the revision,
// and a popup saved back as it was read is no change.
func TestWhereFieldsTravelThroughTheWrites(t *testing.T) {
	t.Parallel()
	mem := managetest.NewMemory(func() time.Time { return t0 })
	svc := manage.New(mem, func() time.Time { return t0 })
	full := popuptest.Full().Targeting
	in := popup.Input{Name: "where", Targeting: &popup.TargetingInput{Placements: full.Placements, Trigger: full.Trigger, Rules: full.Rules}}
	created, err := svc.Create(ctx, admin, build(t, in))
	require.NoError(t, err)
	require.Equal(t, full.Rules, created.Targeting.Rules)

	plain := created
	plain.Targeting.Placements, plain.Targeting.Trigger, plain.Targeting.Rules = nil, nil, nil
	updated, changed, err := svc.Update(ctx, admin, created.ID, plain, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Nil(t, updated.Targeting.Rules)

	back, changed, err := svc.Rollback(ctx, admin, created.ID, created.Revision, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, full.Placements, back.Targeting.Placements)
	assert.Equal(t, full.Trigger, back.Targeting.Trigger)
	assert.Equal(t, full.Rules, back.Targeting.Rules)

	_, changed, err = svc.Update(ctx, admin, created.ID, back, popup.UpdateOptions{})
	require.NoError(t, err)
	assert.False(t, changed, "saved back as read: no change")
}
