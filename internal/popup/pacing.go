package popup

import (
	"strconv"
	"time"
)

// Pacing is the team's pacing across campaigns (docs/CONTRACT.md §13), a team setting carried in
// every snapshot: after any popup is shown to a user, no other for MinGap; at most DailyCap popups
// a user per UTC day. A popup with ExemptFromCaps passes both (its own rules still apply). Like
// every display rule, pacing only extends hiding: the last shown time and the day's count only
// move forward, so a remembered "nothing until t" stays true under it (decide/local.go).
type Pacing struct {
	MinGap   time.Duration // 0 = none
	DailyCap int           // 0 = no cap
	// HeldOut is set per decision, never stored: the user is in the team's holdout
	// (HoldoutCheck.Holds), so only popups with HoldoutExempt can show (docs/CONTRACT.md §15).
	HeldOut bool
}

// Limits of the pacing settings: a gap of at most a week, a cap of at most 1,000 a day.
const (
	MaxMinGapSeconds = 7 * 24 * 3600
	MaxDailyCap      = 1000
)

// ValidatePacing checks minGapSeconds and dailyCap as the settings take them, naming the fields
// min_gap_seconds and daily_cap.
func ValidatePacing(minGapSeconds int64, dailyCap int) []FieldError {
	var v validator
	if minGapSeconds < 0 || minGapSeconds > MaxMinGapSeconds {
		v.add("min_gap_seconds", "must be between 0 (no gap) and "+strconv.Itoa(MaxMinGapSeconds)+" (a week)")
	}
	if dailyCap < 0 || dailyCap > MaxDailyCap {
		v.add("daily_cap", "must be between 0 (no cap) and "+strconv.Itoa(MaxDailyCap))
	}
	return v.fields
}

// reason is what the pacing hides every popup that is not exempt by, for s at now: the daily cap,
// else the min gap, else ReasonNone. s may be nil.
func (pc Pacing) reason(s *UserState, now time.Time) Reason {
	switch {
	case pc.DailyCap > 0 && s.ImpressionsOn(now) >= pc.DailyCap:
		return ReasonDailyCap
	case pc.MinGap > 0 && s != nil && now.Before(s.LastShownAt.Add(pc.MinGap)):
		return ReasonMinGap
	}
	return ReasonNone
}

// Holds reports whether the pacing hides every popup that is not exempt from it from s at now:
// the daily cap is reached or the min gap has not passed. s may be nil.
func (pc Pacing) Holds(s *UserState, now time.Time) bool { return pc.reason(s, now) != ReasonNone }

// until is the instant at or after now from which the pacing no longer hides popups that are
// not exempt from s, as far as s goes: the end of the UTC day once the cap is reached, the end of
// the gap after the last popup shown, whichever is later; now when nothing hides them.
func (pc Pacing) until(s *UserState, now time.Time) time.Time {
	t := now
	if pc.DailyCap > 0 && s.ImpressionsOn(now) >= pc.DailyCap {
		t = time.Unix((int64(DayNumber(now))+1)*86400, 0).UTC()
	}
	if pc.MinGap > 0 && s != nil {
		if g := s.LastShownAt.Add(pc.MinGap); g.After(t) {
			t = g
		}
	}
	return t
}

// Team is the team settings that every config version carries to every instance with its
// popups (docs/CONTRACT.md §13, §15): read with them in one consistent read, cached with them,
// and served from the snapshot with no I/O of its own.
type Team struct {
	Pacing  *Pacing // nil: never set (the instance's default applies)
	Holdout Holdout // the running holdout phase; the zero value for none
}
