package popup

import (
	"cmp"
	"slices"
	"time"

	"popupsvc/internal/popup/rules"
)

// SortForSelection puts candidates in selection order: priority descending, then id ascending,
// so that equal priorities resolve the same way on every instance and every request.
func SortForSelection(cs []*Compiled) {
	slices.SortFunc(cs, func(a, b *Compiled) int {
		if a.Popup.Priority != b.Popup.Priority {
			return cmp.Compare(b.Popup.Priority, a.Popup.Priority)
		}
		return cmp.Compare(a.Popup.ID, b.Popup.ID)
	})
}

// Select returns the highest-priority popup user state s may see at now: the first candidate, in
// the given order (see SortForSelection), for which reason (the one eligibility rule, which Explain
// reports and NextEligibleAt inverts) finds nothing. A capped or cooling-down popup falls through
// to the next. It returns nil if none qualifies. s may be nil (no state); pace is the team's
// pacing (its zero value: none). Select records nothing: the caller applies the impression. It
// does not allocate.
func Select(cs []*Compiled, r Request, s *UserState, now time.Time, pace Pacing) *Compiled {
	q := newQuery(&r)
	d := newDecision(&q, s, now, pace)
	for _, c := range cs {
		if c.reason(&d) == ReasonNone {
			return c
		}
	}
	return nil
}

// AnyMatch reports whether some popup in cs is active, in its window at now and targets r:
// whether Select could choose anything for r under some user state. It is the check that needs
// no I/O, so a caller can skip reading the state when it fails. It prepares r once for all of cs
// and does not allocate. r is only read (by pointer: the hot path passes it without a copy).
//
// The popups that target audiences or carry rules are looked at only when no other matches
// (costlyMatch): an audience check reads the member set (a random place in megabytes), rules
// look the request's attributes up and compare them, and the answer is the same in any order.
func AnyMatch(cs []*Compiled, r *Request, now time.Time) bool {
	q := newQuery(r)
	sec, nsec := now.Unix(), int32(now.Nanosecond())
	deferred := false
	for _, c := range cs {
		if !c.active || c.windowReason(sec, nsec) != ReasonNone {
			continue
		}
		if c.costlyMatch() {
			deferred = true
			continue
		}
		if c.match(&q) == ReasonNone {
			return true
		}
	}
	if !deferred {
		return false
	}
	for _, c := range cs {
		if c.costlyMatch() && c.active && c.windowReason(sec, nsec) == ReasonNone && c.match(&q) == ReasonNone {
			return true
		}
	}
	return false
}

// costlyMatch reports whether matching c takes more than comparing the request's fields: an
// audience's membership test, or rules on the attributes.
func (c *Compiled) costlyMatch() bool { return c.whereBits&whereRules != 0 || c.targetsAudiences() }

// Candidate is one popup's verdict in an Explain: the admin preview's answer to "why not this one?".
// Eligible is true for the chosen popup only, so Eligible == (Reason == ReasonNone); a popup that
// passed every rule but lost to a higher-priority one has Reason ReasonLowerPriority.
type Candidate struct {
	ID       int64
	Name     string
	Priority int
	Eligible bool
	Reason   Reason
	// Audience is the audience an audience reason is about; 0 for the other reasons.
	Audience int64
	// Trigger is the outcome of the popup's trigger conditions on the request's event properties,
	// when the request carries the event the popup waits for and the trigger has conditions; nil
	// otherwise. Rules are each of the popup's rules' outcomes on the request's attributes (nil
	// without rules), whatever Reason is, so an operator sees every rule's fate at once.
	Trigger *rules.Outcome
	Rules   []rules.Outcome
}

// Explain runs the same checks as Select and returns, besides the popup Select would choose,
// a Candidate for every element of cs in the given order, with the first rule that rules it out.
func Explain(cs []*Compiled, r Request, s *UserState, now time.Time, pace Pacing) (chosen *Compiled, out []Candidate) {
	out = make([]Candidate, 0, len(cs))
	q := newQuery(&r)
	d := newDecision(&q, s, now, pace)
	for _, c := range cs {
		reason := c.reason(&d)
		switch {
		case reason == ReasonNone && chosen == nil:
			chosen = c
		case reason == ReasonNone:
			reason = ReasonLowerPriority
		}
		cand := Candidate{
			ID:       c.Popup.ID,
			Name:     c.Popup.Name,
			Priority: c.Popup.Priority,
			Eligible: reason == ReasonNone,
			Reason:   reason,
		}
		switch reason {
		case ReasonNotInAudience, ReasonInExcludedAudience, ReasonAudienceNotLoaded:
			_, cand.Audience = c.audienceVerdict(q.uid)
		}
		if c.whereBits&(whereTrigger|whereRules) != 0 {
			w := c.whereVerdict(&q)
			cand.Trigger, cand.Rules = w.Trigger, w.Rules
		}
		out = append(out, cand)
	}
	return chosen, out
}

// decision is what every candidate of one decision is checked against, prepared once: the
// request, the user's state, the instant and what the team's pacing and holdout say at it.
type decision struct {
	q       *query
	s       *UserState
	now     time.Time
	sec     int64
	nsec    int32
	paced   Reason // the pacing's reason at now (the daily cap, the min gap or none)
	heldOut bool
}

func newDecision(q *query, s *UserState, now time.Time, pace Pacing) decision {
	return decision{q: q, s: s, now: now, sec: now.Unix(), nsec: int32(now.Nanosecond()),
		paced: pace.reason(s, now), heldOut: pace.HeldOut}
}

// reason is the eligibility rule, the only one: the first check that rules c out for d, in this
// order: status, window, targeting, then the display rules (display); ReasonNone when c may show.
// Select chooses by it, Explain reports it, and NextEligibleAt finds the instant from which it
// finds nothing (TestNextEligibleAtIsWhenReasonClears). The pacing and the holdout are read once
// per decision (newDecision), not once per popup.
func (c *Compiled) reason(d *decision) Reason {
	if !c.active {
		return ReasonNotActive
	}
	if reason := c.windowReason(d.sec, d.nsec); reason != ReasonNone {
		return reason
	}
	if reason := c.match(d.q); reason != ReasonNone {
		return reason
	}
	return c.display(d)
}
