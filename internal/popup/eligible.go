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
// It does not allocate.
func NextEligibleAt(cs []*Compiled, r Request, s *UserState, now time.Time, pace Pacing) time.Time {
	q := newQuery(&r)
	paced := pace.until(s, now)
	var earliest time.Time
	for _, c := range cs {
		if pace.HeldOut && !c.Popup.HoldoutExempt {
			continue // never, for a user held out (as long as the config holds them out)
		}
		floor := now
		if !c.Popup.ExemptFromCaps {
			floor = paced
		}
		if !earliest.IsZero() && !earliest.After(floor) {
			// c cannot show before its floor, so it cannot make the answer earlier: a capped
			// user stops at the first popup due when the cap ends instead of matching them all.
			if !earliest.After(now) {
				break // nothing is earlier than now
			}
			continue
		}
		if t := c.eligibleFrom(&q, s, now, floor); !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	return earliest
}

// eligibleFrom is the earliest instant at or after floor (itself at or after now: when the
// pacing lets c through) at which c passes every check for q and s, or the zero time for never.
func (c *Compiled) eligibleFrom(q *query, s *UserState, now, floor time.Time) time.Time {
	if !c.active || c.match(q) != ReasonNone {
		return time.Time{}
	}
	var st PopupState
	if s != nil {
		st = s.Popups.Get(c.Popup.ID)
	}
	if c.Popup.MaxImpressions > 0 && st.Impressions >= c.Popup.MaxImpressions {
		return time.Time{}
	}
	t := floor
	if start := c.Popup.StartAt; start != nil && start.After(t) {
		t = *start
	}
	if st.NextShowAt.After(t) {
		t = st.NextShowAt
	}
	if !t.Before(Forever) {
		return time.Time{} // hidden forever (a cooldown of -1)
	}
	if c.windowReason(t.Unix(), int32(t.Nanosecond())) == ReasonEnded {
		return time.Time{} // the schedule is over before the popup could show again
	}
	return t.UTC()
}
