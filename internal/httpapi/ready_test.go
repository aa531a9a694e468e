package httpapi

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// TestReadyFollowsTheReadinessRule: Ready (popup_ready) is false until a snapshot is loaded and
// until the audiences are settled, as /readyz is.
func TestReadyFollowsTheReadinessRule(t *testing.T) {
	t.Parallel()
	holder := &snapshot.Holder{}
	settled := make(chan struct{})
	p := &Public{Snapshots: holder, AudiencesSettled: settled}
	assert.False(t, p.Ready(), "no snapshot")
	assert.Equal(t, "no config snapshot loaded", p.notReady())
	holder.Store(snapshot.BuildWith(1, []popup.Popup{}, t0, popup.LinkSchemes{}, nil))
	assert.False(t, p.Ready(), "audiences not settled")
	close(settled)
	assert.True(t, p.Ready())
	assert.True(t, (&Public{Snapshots: holder}).Ready(), "no audiences to wait for")
}
