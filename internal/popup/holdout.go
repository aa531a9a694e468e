package popup

import (
	"strconv"
	"time"
)

// The global holdout (docs/CONTRACT.md §15): a team setting, holdout_percent, keeps that share of
// all users from every popup that is not HoldoutExempt, so that the users held out, compared with
// the others on the goals (§14), say whether the popups help at all. Membership is
//
//	bucket = fmix64(FNV-1a 64("<salt>:h:<uid>")) mod 10000;  held out when bucket < 100 × percent
//
// with the holdout's own salt (tag "h"), independent of the rollout bucket and of every
// experiment's (their salts are drawn separately, their tags differ). A change of the percentage
// starts a new phase (results are per phase) but keeps the salt: the users a running holdout
// holds out stay held out when it grows, and a smaller holdout keeps a part of them; only the
// users between the two percentages move.

// Holdout is the team's holdout in one config version: its current phase, or the zero value for
// none (the setting is 0, or was never set).
type Holdout struct {
	Percent   int    // 1-MaxHoldoutPercent while a phase runs; 0 = no holdout
	Salt      string // drawn when the first phase starts; kept by every later one
	Phase     int    // 1, 2, … ; 0 = never started
	StartedAt time.Time
	// EndedAt is when the phase ended (a later phase started, or the setting went to 0); zero
	// while it runs.
	EndedAt time.Time
}

// MaxHoldoutPercent bounds holdout_percent: peers recommend 1-10%, and a holdout larger than a
// fifth of the users costs more reach than any measurement needs.
const MaxHoldoutPercent = 20

// HoldoutGroup is a side of the holdout's comparison, as the worker counts it.
type HoldoutGroup string

// The two groups: the users held out, and the others (shown popups).
const (
	HoldoutHeld   HoldoutGroup = "holdout"
	HoldoutOthers HoldoutGroup = "others"
)

// ValidateHoldoutPercent checks a holdout_percent as the settings take it, naming the field.
func ValidateHoldoutPercent(percent int) []FieldError {
	if percent < 0 || percent > MaxHoldoutPercent {
		return []FieldError{{Field: "holdout_percent", Message: "must be a whole number from 0 (no holdout) to " + strconv.Itoa(MaxHoldoutPercent)}}
	}
	return nil
}

// Running reports whether the phase holds users out now.
func (h Holdout) Running() bool { return h.Percent > 0 && h.EndedAt.IsZero() }

// RunningPercent is the share held out now: the phase's percentage while it runs, else 0 (what
// the setting reads).
func (h Holdout) RunningPercent() int {
	if h.Running() {
		return h.Percent
	}
	return 0
}

// Change is the holdout after an operator sets the percentage to percent at now, and whether
// anything changes: the same percentage changes nothing; any other ends the running phase (at
// now) and, unless percent is 0, starts the next one with the same salt (a fresh one for the
// first phase ever). ended is the phase it ends (the zero value for none).
func (h Holdout) Change(percent int, now time.Time) (next, ended Holdout, changed bool) {
	if percent == h.RunningPercent() {
		return h, Holdout{}, false
	}
	if h.Running() {
		ended = h
		ended.EndedAt = now.UTC().Truncate(time.Millisecond) // as stored
	}
	if percent == 0 {
		return ended, ended, true
	}
	next = Holdout{Percent: percent, Salt: h.Salt, Phase: h.Phase + 1, StartedAt: now.UTC().Truncate(time.Millisecond)}
	if next.Salt == "" {
		next.Salt = NewBucketSeed()
	}
	return next, ended, true
}

// PhaseKey names the phase in the experiment tables the worker counts it in, where it is the
// experiment of popup id 0 (HoldoutPopupID) with this key for its salt: "<salt>-p<phase>", so
// that phases sharing the salt count apart.
func (h Holdout) PhaseKey() string { return h.Salt + "-p" + strconv.Itoa(h.Phase) }

// HoldoutPopupID is the popup id the holdout is counted under in the experiment tables: no popup
// has it (ids start at 1).
const HoldoutPopupID = 0

// HoldoutBucket is uid's holdout bucket 0..9999 under salt (see the package comment above).
func HoldoutBucket(salt, uid string) int { return expBucket(expState(salt, 'h'), uid) }

// HoldoutCheck is a running phase's membership test prepared for the hot path: the hash state of
// the salt and the bucket limit. The zero value holds nobody out. It does not allocate.
type HoldoutCheck struct {
	state uint64
	limit int
}

// Check prepares h's membership test; nobody is held out unless the phase runs.
func (h Holdout) Check() HoldoutCheck {
	if !h.Running() {
		return HoldoutCheck{}
	}
	return HoldoutCheck{state: expState(h.Salt, 'h'), limit: h.Percent * ExperimentBuckets / 100}
}

// Holds reports whether uid is held out.
func (hc HoldoutCheck) Holds(uid string) bool {
	return hc.limit > 0 && expBucket(hc.state, uid) < hc.limit
}

// HoldoutMark is the user's last holdout exposure (in the holdout: the would-be impression
// recorded; in the others: the impression that carried the group), part of the user's state so
// that a user is counted at most once a UTC day without another Redis round trip.
type HoldoutMark struct {
	Phase int32
	Day   int32 // DayNumber
}

// MarkedOn reports whether s already carries a holdout exposure of phase on now's UTC day.
func (s *UserState) MarkedOn(phase int, now time.Time) bool {
	return s != nil && s.Holdout.Phase == int32(phase) && s.Holdout.Day == DayNumber(now)
}
