package popup

import "time"

// CampaignState is the campaign state an operator thinks in, derived from the status and the window at
// a given time; it is never stored.
type CampaignState string

// The campaign states (docs/CONTRACT.md, "Campaign states").
const (
	StateDraft     CampaignState = "draft"
	StateScheduled CampaignState = "scheduled" // active, start_at still ahead
	StateRunning   CampaignState = "running"   // active, inside [start_at, end_at)
	StatePaused    CampaignState = "paused"
	StateEnded     CampaignState = "ended" // active, end_at passed
	StateArchived  CampaignState = "archived"
)

// States lists every state, in the order a campaign usually goes through them.
var States = []CampaignState{StateDraft, StateScheduled, StateRunning, StatePaused, StateEnded, StateArchived}

// Valid reports whether s is one of the six states.
func (s CampaignState) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// StateAt is p's campaign state at now. Only an active popup has a window that matters, and the
// window is half-open: running from the instant start_at is reached, ended at the instant end_at is.
func (p *Popup) StateAt(now time.Time) CampaignState {
	switch p.Status {
	case StatusDraft:
		return StateDraft
	case StatusPaused:
		return StatePaused
	case StatusArchived:
		return StateArchived
	}
	switch {
	case p.StartAt != nil && now.Before(*p.StartAt):
		return StateScheduled
	case p.EndAt != nil && !now.Before(*p.EndAt):
		return StateEnded
	}
	return StateRunning
}
