package popup

import "time"

// NextEligibleAt returns the earliest instant, at or after now, at which Select over the same
// candidates, request and user state could choose something: now when it could already, the zero
// time when nothing in cs can ever show to this request. Every way a popup stays hidden ends at a
// known instant: its schedule's start_at, its next_show_at (reshow interval or a cooldown), and
// unless it is exempt from caps the pacing's end (the end of the UTC day once the daily cap is
// reached, the end of the min gap). A popup that is not holdout-exempt never shows to a user the
// holdout holds out (pace.HeldOut). Status, targeting, max_impressions and an ended schedule hide
// it for good, as far as this config goes.
//
// The answer holds for as long as the config and the user's state stay as given. Every
// transition of a user's state only extends hiding (see ApplyImpression, ApplyClick,
// ApplyClose), so a "nothing until t" stays true however that user's state changes meanwhile:
// a caller may remember it until t or until the config changes, whichever comes first.
// It is derived from the eligibility rule (reason), not a second copy of it: it asks reason about
// each popup once, at the instant every hiding that ends (the pacing, the schedule's start,
// next_show_at) has ended. It does not allocate.
func NextEligibleAt(cs []*Compiled, r Request, s *UserState, now time.Time, pace Pacing) time.Time {
	q := newQuery(&r)
	paced := pace.until(s, now)
	atNow, atPaced := newDecision(&q, s, now, pace), newDecision(&q, s, paced, pace)
	var earliest time.Time
	for _, c := range cs {
		d, floor := &atNow, now
		if !c.Popup.ExemptFromCaps {
			d, floor = &atPaced, paced
		}
		if !earliest.IsZero() && !earliest.After(floor) {
			// c cannot show before its floor, so it cannot make the answer earlier: a capped
			// user stops at the first popup due when the cap ends instead of matching them all.
			if !earliest.After(now) {
				break // nothing is earlier than now
			}
			continue
		}
		if t := c.eligibleFrom(d, floor, pace); !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	return earliest
}

// eligibleFrom is the earliest instant at or after floor (d's instant: the one from which the
// pacing lets c through, at or after now) at which reason finds nothing for c, or the zero time
// for never. Before the instant t it asks about, c is hidden by the pacing, its schedule's start
// or its next_show_at (which the cooldowns set), and every one of those has ended at t: what
// reason finds at t (status, an ended schedule, targeting, the holdout, max_impressions) holds
// for good, as far as this config goes. floor is d.now, passed apart: an answer derived from d
// would move d's query to the heap (escape analysis does not tell d's fields apart).
func (c *Compiled) eligibleFrom(d *decision, floor time.Time, pace Pacing) time.Time {
	t, later := floor, false
	if start := c.Popup.StartAt; start != nil && start.After(t) {
		t, later = *start, true
	}
	if d.s != nil {
		if next := d.s.Popups.Get(c.Popup.ID).NextShowAt; next.After(t) {
			t, later = next, true
		}
	}
	at := d // prepared for floor
	if later {
		if !t.Before(Forever) {
			return time.Time{} // hidden forever (a cooldown of -1)
		}
		dt := newDecision(d.q, d.s, t, pace)
		at = &dt
	}
	if c.reason(at) != ReasonNone {
		return time.Time{}
	}
	return t.UTC()
}
