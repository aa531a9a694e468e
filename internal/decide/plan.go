package decide

import (
	"time"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// planInput is everything a homepage decision is planned from. All of it is read or drawn
// before planning, so plan does no I/O and the same input always gives the same plan.
type planInput struct {
	Snap  *snapshot.Snapshot
	Cands []*popup.Compiled // Snap's candidates for Req (Snapshot.Candidates)
	Req   popup.Request
	// State is the user's state as read. plan applies the display rules of the events it plans
	// to it, so that it becomes the state to record with them.
	State *popup.UserState
	Now   time.Time
	// ID is a fresh id; the decision id is it with the experiment suffixes plan appends. It is
	// drawn before planning so that plan touches no shared state; a plan that records nothing
	// leaves it unused.
	ID freshID
}

// decisionPlan is one homepage decision: the popup shown and what to record with the state.
type decisionPlan struct {
	// Shown is the popup shown; nil for none (nothing eligible, or a control that shows nothing).
	Shown *snapshot.Entry
	// Arm is the user's arm in Shown's running experiment, always a variant (a control shows
	// nothing); -1 when Shown is outside any experiment or nothing is shown.
	Arm int
	// Body and Locale are what Shown shows for the request's lang (Entry.ShownIn), chosen once:
	// the impression records the locale the answer names.
	Body   []byte
	Locale string
	// DecisionID names the decision: the impression's id, and the prefix of each exposure's;
	// "" when there is nothing to record.
	DecisionID string
	// Events are what to record, in order, with the state plan left: control exposures, then
	// Shown's impression. None when nothing is eligible: nothing is recorded.
	Events []event.Event
}

// plan decides what a homepage request shows and records, from the user's state as read
// (docs/CONTRACT.md §2 Selection, §10). The popup Select chooses, x, is one of:
//
//   - outside any experiment (arm -1) or in a variant arm of its experiment: x's impression,
//     counting for the arm, and x's content or the variant's;
//   - in the control: x's control exposure (the display rules advance as an impression's would,
//     the daily count does not) and no popup, or with fall_through the selection goes on after x
//     with the state as updated, and the next popup (its own experiment handled alike) is shown.
//
// A plain decision is thus the first case with arm -1: one impression named by the fresh id.
// The decision id also names x's arm and every control passed on the way, so that a click on the
// popup the chain ends at counts for each of them (Act); a chain stops where the id cannot name
// one more, or at event.MaxRecordEvents events.
func plan(in *planInput) decisionPlan {
	c := popup.Select(in.Cands, in.Req, in.State, in.Now, in.Snap.Pacing)
	if c == nil {
		return decisionPlan{Arm: -1}
	}
	var buf [maxDecisionIDLen + 8]byte
	decision := in.ID.append(buf[:0])
	i := c.Arm(in.Req.UID)
	n := 1 // the impression
	if i >= 0 {
		decision = appendArm(decision, c.Popup.ID, i)
		n = 2 // room for a control's exposure and a fall-through's impression
	}
	p := decisionPlan{Arm: -1}
	evs := make([]event.Event, 0, n)
	rest := in.Cands
	for {
		entry := in.Snap.Entry(c.Popup.ID)
		if i < 0 || !c.Popup.Experiment.IsControl(i) {
			ps := c.ApplyImpression(in.State, in.Now)
			ev := event.Event{UID: in.Req.UID, PopupID: c.Popup.ID, Action: event.Impression, At: in.Now,
				NextShowAt: ps.NextShowAt, Impressions: ps.Impressions, DayCount: in.State.ImpressionsOn(in.Now)}
			if i >= 0 {
				ev.Arms = entry.ArmRefs[i]
			}
			p.Body, p.Locale = entry.ShownIn(i, in.Req.Lang)
			ev.Locale = p.Locale
			evs = append(evs, ev)
			p.Shown, p.Arm = entry, i
			break
		}
		ps := c.ApplyExposure(in.State, in.Now)
		evs = append(evs, event.Event{UID: in.Req.UID, PopupID: c.Popup.ID, Action: event.Exposure, At: in.Now,
			NextShowAt: ps.NextShowAt, Impressions: ps.Impressions, Arms: entry.ArmRefs[i]})
		if c.Popup.Experiment.Control.Mode != popup.ControlFallThrough || len(evs) == event.MaxRecordEvents {
			break
		}
		// As if c did not apply: the candidates after it (those before it did not qualify, and
		// an exposure changes nothing they depend on).
		rest = after(rest, c)
		if c = popup.Select(rest, in.Req, in.State, in.Now, in.Snap.Pacing); c == nil {
			break
		}
		if i = c.Arm(in.Req.UID); i >= 0 && c.Popup.Experiment.IsControl(i) {
			next := appendArm(decision, c.Popup.ID, i)
			if len(next) > maxDecisionIDLen {
				break
			}
			decision = next
		}
	}
	p.DecisionID = string(decision)
	for k := range evs {
		ev := &evs[k]
		ev.DecisionID = p.DecisionID
		if ev.Action == event.Exposure {
			ev.ID = exposureID(p.DecisionID, k+1)
		} else {
			ev.ID = p.DecisionID
		}
	}
	p.Events = evs
	return p
}

// answer is the homepage answer once p is recorded under config version, in the language plan
// chose for the request's lang.
func (p *decisionPlan) answer(version int64) Answer {
	if p.Shown == nil {
		return Answer{Kind: None, Version: version}
	}
	a := Answer{Kind: Shown, Version: version, Popup: p.Shown, DecisionID: p.DecisionID, Body: p.Body, Locale: p.Locale}
	if p.Arm >= 0 {
		a.Variant = p.Shown.Popup.Experiment.ArmKey(p.Arm)
	}
	return a
}

// outcome is how popup_decisions_total counts p once recorded.
func (p *decisionPlan) outcome() outcome {
	if p.Shown == nil {
		return outControl // events but nothing shown: only a control's exposures
	}
	return outPopup
}

// after is the part of cs after c (which cs holds).
func after(cs []*popup.Compiled, c *popup.Compiled) []*popup.Compiled {
	for i := range cs {
		if cs[i] == c {
			return cs[i+1:]
		}
	}
	return nil
}
