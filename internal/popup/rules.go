package popup

import "time"

// Reason says why a popup was not chosen for a request. ReasonNone means it was (or could be).
type Reason string

// Reasons, in the order Select checks them: status, window, targeting, display rules, priority.
const (
	ReasonNone       Reason = ""
	ReasonNotActive  Reason = "not_active"
	ReasonNotStarted Reason = "not_started"
	ReasonEnded      Reason = "ended"
	// ReasonPlacement: the popup does not list the request's placement; ReasonTrigger: the
	// request's event (or its lack of one) is not what the popup's trigger waits for, or its
	// properties fail the trigger's conditions (where.go).
	ReasonPlacement  Reason = "placement"
	ReasonTrigger    Reason = "trigger"
	ReasonPlatform   Reason = "platform"
	ReasonAppVersion Reason = "app_version"
	ReasonRegion     Reason = "region"
	ReasonLang       Reason = "lang"
	ReasonRollout    Reason = "rollout"
	// ReasonRules: none of the popup's attribute rules holds for the request (Candidate.Rules
	// says which condition of each failed).
	ReasonRules Reason = "rules"
	// The audience reasons (Candidate.Audience names the audience): the user is in none of the
	// included audiences, or in an excluded one, or this instance does not hold an audience the
	// popup names yet and answers as a list would that keeps the popup from the user (fail-closed:
	// not a member of an include, a member of an exclude).
	ReasonNotInAudience      Reason = "not_in_audience"
	ReasonInExcludedAudience Reason = "in_excluded_audience"
	ReasonAudienceNotLoaded  Reason = "audience_not_loaded"
	ReasonReshow             Reason = "reshow"
	ReasonClickCooldown      Reason = "click_cooldown"
	ReasonCloseCooldown      Reason = "close_cooldown"
	ReasonMaxImpressions     Reason = "max_impressions"
	ReasonDailyCap           Reason = "daily_cap"
	// ReasonMinGap: the team's min_gap_seconds since the user was last shown a popup has not
	// passed (docs/CONTRACT.md §13).
	ReasonMinGap Reason = "min_gap"
	// ReasonHoldout: the user is in the team's holdout, and the popup is not holdout_exempt
	// (docs/CONTRACT.md §15).
	ReasonHoldout       Reason = "holdout"
	ReasonLowerPriority Reason = "lower_priority"
)

// PopupState is one user's display state for one popup. Times are UTC; the zero time means never.
type PopupState struct {
	NextShowAt       time.Time // hidden while now < NextShowAt
	Impressions      int
	LastImpressionAt time.Time
	LastClickAt      time.Time
	LastCloseAt      time.Time
}

// Forever is the NextShowAt used for "never again" (click or close cooldown -1). It is a real,
// far-future instant rather than a flag so that every store can keep it in a plain timestamp
// column and "now < NextShowAt" needs no special case; 9999-12-31T23:59:59Z fits MySQL DATETIME.
var Forever = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// UserState is all of one user's display state.
type UserState struct {
	Popups PopupStates // by popup id
	// Day is the UTC day number (unix seconds / 86400, floored) that DayCount counts impressions
	// of, for the service-wide daily cap. One counter suffices because only today matters.
	Day      int32
	DayCount int
	// LastShownAt is when the user was last shown any popup (an impression; a control exposure
	// shows nothing), for the pacing's min gap; zero = never.
	LastShownAt time.Time
	// Holdout is the user's last holdout exposure (docs/CONTRACT.md §15); zero = none.
	Holdout HoldoutMark
}

// DayNumber is the UTC day number of t: unix seconds / 86400, floored. Stores that keep
// UserState.Day use it so that every instance agrees on when a day starts.
func DayNumber(t time.Time) int32 {
	sec := t.Unix()
	d := sec / 86400
	if sec%86400 < 0 {
		d--
	}
	return int32(d)
}

// ImpressionsOn returns how many popups the user was shown on now's UTC day. A nil state has none.
func (s *UserState) ImpressionsOn(now time.Time) int {
	if s == nil || s.Day != DayNumber(now) {
		return 0
	}
	return s.DayCount
}

// Eligible applies the display rules (not status, window or targeting, which Select checks first)
// for user state s at now. s may be nil for a user with no state. It checks, in order: the
// team's holdout (for a user held out, not for a popup exempt from it), the team's pacing (the daily cap, then the min gap; not for a popup exempt from caps),
// max_impressions, and whether the popup is still hidden (now < NextShowAt; at exactly NextShowAt
// it is shown again). A hidden popup is explained by its cause, for the admin preview: a click
// whose cooldown still covers now, else a close whose cooldown still covers now, else the reshow
// interval after an impression.
func (c *Compiled) Eligible(s *UserState, now time.Time, pace Pacing) Reason {
	d := newDecision(nil, s, now, pace) // display reads no query
	return c.display(&d)
}

// display is Eligible for a prepared decision: the part of reason after targeting.
func (c *Compiled) display(d *decision) Reason {
	if d.heldOut && !c.Popup.HoldoutExempt {
		return ReasonHoldout
	}
	if d.paced != ReasonNone && !c.Popup.ExemptFromCaps {
		return d.paced
	}
	return c.ownRules(d.s, d.now)
}

// ownRules applies the popup's own display rules (Eligible without the pacing).
func (c *Compiled) ownRules(s *UserState, now time.Time) Reason {
	var st PopupState
	if s != nil {
		st = s.Popups.Get(c.Popup.ID)
	}
	if c.Popup.MaxImpressions > 0 && st.Impressions >= c.Popup.MaxImpressions {
		return ReasonMaxImpressions
	}
	if !now.Before(st.NextShowAt) {
		return ReasonNone
	}
	switch {
	case !st.LastClickAt.IsZero() && now.Before(hideUntil(st.LastClickAt, c.Popup.ClickCooldownSeconds)):
		return ReasonClickCooldown
	case !st.LastCloseAt.IsZero() && now.Before(hideUntil(st.LastCloseAt, c.Popup.CloseCooldownSeconds)):
		return ReasonCloseCooldown
	}
	return ReasonReshow
}

// ApplyImpression records that the popup was returned to the user at at: it is hidden for
// reshow_after_seconds, its impression count and the user's count for at's UTC day go up, and at
// is the user's last shown time (the pacing's min gap) unless a later one is known.
// The new state is stored in s (s must not be nil) and returned.
// Like every transition it only extends hiding, so a replayed or reordered event is harmless;
// an impression from an older day than s.Day leaves the daily counter alone.
func (c *Compiled) ApplyImpression(s *UserState, at time.Time) PopupState {
	at = at.UTC()
	st := s.Popups.Get(c.Popup.ID)
	st.NextShowAt = later(st.NextShowAt, hideUntil(at, c.Popup.ReshowAfterSeconds))
	st.Impressions++
	st.LastImpressionAt = later(st.LastImpressionAt, at)
	s.LastShownAt = later(s.LastShownAt, at)
	switch day := DayNumber(at); {
	case day == s.Day:
		s.DayCount++
	case day > s.Day:
		s.Day, s.DayCount = day, 1
	}
	return s.store(c.Popup.ID, st)
}

// ApplyExposure records a control exposure at at (docs/CONTRACT.md §10): the user was in the
// control arm of the popup's experiment where an impression would have been, so the popup's
// display rules advance exactly as ApplyImpression's do (hidden for reshow_after_seconds, its
// impression count up, for max_impressions) but the user's daily count does not: nothing was
// shown. Like every transition it only extends hiding. The new state is stored in s and returned.
func (c *Compiled) ApplyExposure(s *UserState, at time.Time) PopupState {
	at = at.UTC()
	st := s.Popups.Get(c.Popup.ID)
	st.NextShowAt = later(st.NextShowAt, hideUntil(at, c.Popup.ReshowAfterSeconds))
	st.Impressions++
	st.LastImpressionAt = later(st.LastImpressionAt, at)
	return s.store(c.Popup.ID, st)
}

// ApplyClick records a click at at: the popup stays hidden for click_cooldown_seconds (Forever
// for -1), or as long as it already was, whichever is later.
func (c *Compiled) ApplyClick(s *UserState, at time.Time) PopupState {
	at = at.UTC()
	st := s.Popups.Get(c.Popup.ID)
	st.NextShowAt = later(st.NextShowAt, hideUntil(at, c.Popup.ClickCooldownSeconds))
	st.LastClickAt = later(st.LastClickAt, at)
	return s.store(c.Popup.ID, st)
}

// ApplyClose records a close (dismissal) at at: the popup stays hidden for close_cooldown_seconds
// (Forever for -1), or as long as it already was, whichever is later.
func (c *Compiled) ApplyClose(s *UserState, at time.Time) PopupState {
	at = at.UTC()
	st := s.Popups.Get(c.Popup.ID)
	st.NextShowAt = later(st.NextShowAt, hideUntil(at, c.Popup.CloseCooldownSeconds))
	st.LastCloseAt = later(st.LastCloseAt, at)
	return s.store(c.Popup.ID, st)
}

func (s *UserState) store(id int64, st PopupState) PopupState {
	s.Popups.Set(id, st)
	return st
}

// MergeState is the max-merge of two states of one popup: every field is the larger of the two.
// Because every transition only moves fields forward, merging is commutative, associative and
// idempotent, so a store replaying events in any order, or twice, converges on the same state.
func MergeState(a, b PopupState) PopupState {
	return PopupState{
		NextShowAt:       later(a.NextShowAt, b.NextShowAt),
		Impressions:      max(a.Impressions, b.Impressions),
		LastImpressionAt: later(a.LastImpressionAt, b.LastImpressionAt),
		LastClickAt:      later(a.LastClickAt, b.LastClickAt),
		LastCloseAt:      later(a.LastCloseAt, b.LastCloseAt),
	}
}

// hideUntil is the instant a rule of secs seconds applied at at stops hiding the popup:
// Forever for -1, and never past Forever however large secs is, so the arithmetic cannot
// overflow time.Duration (about 292 years) or leave a store's timestamp range.
func hideUntil(at time.Time, secs int64) time.Time {
	switch {
	case secs < 0:
		return Forever
	case secs == 0:
		return at
	case secs >= Forever.Unix()-at.Unix():
		return Forever
	}
	return time.Unix(at.Unix()+secs, int64(at.Nanosecond())).UTC()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
