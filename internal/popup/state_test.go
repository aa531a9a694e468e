package popup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/popup"
)

func TestStateAt(t *testing.T) {
	t.Parallel()
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	at := func(tm time.Time) *time.Time { return &tm }
	tests := []struct {
		name       string
		status     popup.Status
		start, end *time.Time
		want       popup.CampaignState
	}{
		{name: "draft, whatever the window", status: popup.StatusDraft, end: at(past), want: popup.StateDraft},
		{name: "paused, whatever the window", status: popup.StatusPaused, start: at(future), want: popup.StatePaused},
		{name: "archived", status: popup.StatusArchived, want: popup.StateArchived},
		{name: "active, open window", status: popup.StatusActive, want: popup.StateRunning},
		{name: "active, inside the window", status: popup.StatusActive, start: at(past), end: at(future), want: popup.StateRunning},
		{name: "active, starts later", status: popup.StatusActive, start: at(future), want: popup.StateScheduled},
		{name: "active, starts now: running", status: popup.StatusActive, start: at(now), want: popup.StateRunning},
		{name: "active, ended", status: popup.StatusActive, start: at(past.Add(-time.Hour)), end: at(past), want: popup.StateEnded},
		{name: "active, ends now: ended", status: popup.StatusActive, end: at(now), want: popup.StateEnded},
		{name: "active, 1ns before the end: running", status: popup.StatusActive, end: at(now.Add(time.Nanosecond)), want: popup.StateRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := popup.Popup{Status: tt.status, StartAt: tt.start, EndAt: tt.end}
			assert.Equal(t, tt.want, p.StateAt(now))
		})
	}
}

func TestStateValid(t *testing.T) {
	t.Parallel()
	for _, s := range popup.States {
		assert.True(t, s.Valid(), s)
	}
	assert.False(t, popup.CampaignState("active").Valid(), "a status is not a state")
	assert.False(t, popup.CampaignState("").Valid())
}
