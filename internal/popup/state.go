package popup

import "time"

// State is the campaign state an operator thinks in, derived from the status and the window at
// a given time; it is never stored.
type State string

// The campaign states (docs/CONTRACT.md, "Campaign states").
const (
	StateDraft     State = "draft"
	StateScheduled State = "scheduled" // active, start_at still ahead
	StateRunning   State = "running"   // active, inside [start_at, end_at)
	StatePaused    State = "paused"
	StateEnded     State = "ended" // active, end_at passed
	StateArchived  State = "archived"
)

// States lists every state, in the order a campaign usually goes through them.
var States = []State{StateDraft, StateScheduled, StateRunning, StatePaused, StateEnded, StateArchived}

// Valid reports whether s is one of the six states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// StateAt is p's campaign state at now. Only an active popup has a window that matters, and the
// window is half-open: running from the instant start_at is reached, ended at the instant end_at is.
func (p *Popup) StateAt(now time.Time) State {
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
