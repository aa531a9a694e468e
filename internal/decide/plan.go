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
	// NoneExempt says that no popup of Cands is exempt from the pacing (Snapshot.CapExempt false,
	// no extra popups): then nothing can show while the pacing holds the user (choose). False
	// always walks the candidates.
	NoneExempt bool
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
	// Events are what to record, in order, with the state plan left: a holdout event, control
	// exposures, then Shown's impression. None when nothing is eligible: nothing is recorded.
	Events []event.Event
	// HeldOut says the team's holdout holds the user out (the membership test, taken once).
	HeldOut bool
}

// plan decides what a homepage request shows and records, from the user's state as read
// (docs/CONTRACT.md §2 Selection, §10, §15). The popup Select chooses, x, is one of:
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
//
// While the team's holdout runs, a user it holds out is chosen among the holdout-exempt popups
// only, and when the selection without the holdout would have shown a popup that is not exempt,
// a holdout event comes first (once a UTC day and phase: the state's mark). Another user's first
// impression or fall-through control exposure of a popup that is not exempt carries the others'
// group, once a UTC day and phase too; a control that shows nothing counts in neither group. So both groups count the users the popups would reach, each at most once a day,
// and with no Redis call of their own.
func plan(in *planInput) decisionPlan {
	pace := in.Snap.Pacing
	h := &in.Snap.Holdout
	var held *popup.Compiled // a held-out user's would-be popup, when the holdout event is due
	heldOut := in.Snap.HoldoutCheck.Holds(in.Req.UID)
	if heldOut {
		if x := in.choose(in.Cands, pace); x != nil && !x.Popup.HoldoutExempt && !showsNothing(x, x.Arm(in.Req.UID)) && !in.State.MarkedOn(h.Phase, in.Now) {
			held = x
		}
		pace.HeldOut = true
	}
	c := in.choose(in.Cands, pace)
	if c == nil && held == nil {
		return decisionPlan{Arm: -1, HeldOut: heldOut}
	}
	var buf [maxDecisionIDLen + 8]byte
	decision := in.ID.append(buf[:0])
	p := decisionPlan{Arm: -1, HeldOut: heldOut}
	i, n := -1, 0 // c's arm; the events to make room for
	if c != nil {
		i, n = c.Arm(in.Req.UID), 1 // the impression
		if i >= 0 {
			n = 2 // room for a control's exposure and a fall-through's impression
		}
	}
	if held != nil {
		n++
	}
	evs := make([]event.Event, 0, n)
	if held != nil {
		evs = append(evs, event.Event{UID: in.Req.UID, PopupID: held.Popup.ID, Action: event.Holdout, At: in.Now,
			Arms: in.Snap.HoldoutRefs.Held})
		in.State.Holdout = popup.HoldoutMark{Phase: int32(h.Phase), Day: popup.DayNumber(in.Now)}
	}
	if c != nil {
		decision = p.chain(in, c, i, pace, decision, &evs)
	}
	p.DecisionID = string(decision)
	for k := range evs {
		ev := &evs[k]
		ev.DecisionID = p.DecisionID
		switch ev.Action {
		case event.Holdout:
			ev.ID = holdoutID(p.DecisionID)
		case event.Exposure:
			ev.ID = exposureID(p.DecisionID, k+1)
		default:
			ev.ID = p.DecisionID
		}
	}
	p.Events = evs
	return p
}

// chain plans the popup c the selection chose, the user in its arm i, and what it falls through
// to (plan), appending the events to evs, and returns the decision id with its experiment
// suffixes.
func (p *decisionPlan) chain(in *planInput, c *popup.Compiled, i int, pace popup.Pacing, decision []byte, evs *[]event.Event) []byte {
	if i >= 0 {
		decision = appendArm(decision, c.Popup.ID, i)
	}
	// A user in a control that shows nothing is in neither holdout group: see showsNothing.
	first, exempt := len(*evs), c.Popup.HoldoutExempt || showsNothing(c, i)
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
			p.Body, p.Locale, _ = entry.ShownIn(i, in.Req.Lang)
			ev.Locale = p.Locale
			*evs = append(*evs, ev)
			p.Shown, p.Arm = entry, i
			break
		}
		ps := c.ApplyExposure(in.State, in.Now)
		*evs = append(*evs, event.Event{UID: in.Req.UID, PopupID: c.Popup.ID, Action: event.Exposure, At: in.Now,
			NextShowAt: ps.NextShowAt, Impressions: ps.Impressions, Arms: entry.ArmRefs[i]})
		if c.Popup.Experiment.Control.Mode != popup.ControlFallThrough || len(*evs) == event.MaxRecordEvents {
			break
		}
		// As if c did not apply: the candidates after it (those before it did not qualify, and
		// an exposure changes nothing they depend on).
		rest = after(rest, c)
		if c = in.choose(rest, pace); c == nil {
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
	// The others' group rides on the first event of a popup that is not exempt (the one the
	// selection chose), once a UTC day and phase: a copy of its arm references with the group's.
	if h := &in.Snap.Holdout; !pace.HeldOut && !exempt && h.Running() && !in.State.MarkedOn(h.Phase, in.Now) {
		ev := &(*evs)[first]
		ev.Arms = append(ev.Arms[:len(ev.Arms):len(ev.Arms)], in.Snap.HoldoutRefs.Others...)
		in.State.Holdout = popup.HoldoutMark{Phase: int32(h.Phase), Day: popup.DayNumber(in.Now)}
	}
	return decision
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
	switch {
	case p.Shown != nil:
		return outPopup
	case p.Events[len(p.Events)-1].Action == event.Holdout:
		return outHoldout // a held-out user's holdout event alone
	}
	return outControl // events but nothing shown: a control's exposures (after a holdout event, maybe)
}

// showsNothing reports whether arm i of c's experiment is a control that shows nothing. Such a
// user is counted in neither group of the holdout (docs/CONTRACT.md §15): the others are the
// users a popup is shown to, and the users held out those a popup would have been shown to, so a
// user whose experiment withholds the popup anyway is left out of both alike (the experiment's
// assignment is the same whether or not the holdout holds the user out).
func showsNothing(c *popup.Compiled, i int) bool {
	e := c.Popup.Experiment
	return i >= 0 && e.IsControl(i) && e.Control.Mode != popup.ControlFallThrough
}

// choose is popup.Select of cands for the input's request and state under pace. While the pacing
// holds the user (the daily cap reached, the min gap running) only popups exempt from it can show;
// when the candidates hold none (NoneExempt), nothing can, and they are not walked: a capped user's
// decision costs what it did before the pacing had exemptions (at 1,000 popups the walk of
// every candidate for a capped user was most of that decision's CPU).
func (in *planInput) choose(cands []*popup.Compiled, pace popup.Pacing) *popup.Compiled {
	if in.NoneExempt && pace.Holds(in.State, in.Now) {
		return nil
	}
	return popup.Select(cands, in.Req, in.State, in.Now, pace)
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
