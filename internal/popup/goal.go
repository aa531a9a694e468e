package popup

// Goals: the outcomes experiments measure besides clicks (docs/CONTRACT.md §14). A goal is a named
// conversion event a client or a backend reports (POST /api/v1/conversions); a conversion counts
// for every experiment phase that exposed its user within the goal's window before it.

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a goal.
const (
	MaxGoalKeyLen      = 32
	MaxGoalNameLen     = 100
	MinGoalWindowHours = 1
	MaxGoalWindowHours = 720
	DefaultWindowHours = 72
	GoalKeyRule        = "1-32 characters of [a-z0-9_-]"
)

// MaxConversionValue bounds a conversion's value (either sign: a refund is a negative value).
const MaxConversionValue = 1e12

// GoalValue says what a goal's conversions carry besides their count.
type GoalValue string

// The kinds of goal value.
const (
	// GoalValueNone: only whether and how often users converted; a value sent is ignored.
	GoalValueNone GoalValue = "none"
	// GoalValueSum: each conversion carries a value (a purchase's amount) and the values add up.
	GoalValueSum GoalValue = "sum"
)

// Valid reports whether v is one of the kinds.
func (v GoalValue) Valid() bool { return v == GoalValueNone || v == GoalValueSum }

// Goal is a conversion event experiments count.
type Goal struct {
	Key  string // the name clients send in a conversion's "goal": 1-32 of [a-z0-9_-], never changed
	Name string // what the console shows
	// Window is how long after a user's first exposure in an experiment phase a conversion of
	// the user counts for that phase.
	Window time.Duration
	Value  GoalValue
	// ValueCap, for a sum goal, caps each user's value (the sum of their conversions' values in a
	// phase or a window) in the results' capped sums (winsorised: min(value, cap)); nil for none.
	ValueCap *float64
	// Version increases with every write: the ETag.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ValidGoalKey reports whether s is a well-formed goal key.
func ValidGoalKey(s string) bool { return validKey(s, MaxGoalKeyLen) }

// Validate checks every field of g, naming each that is wrong.
func (g Goal) Validate() error {
	var fields []FieldError
	if !ValidGoalKey(g.Key) {
		fields = append(fields, FieldError{Field: "key", Message: "must be " + GoalKeyRule})
	}
	if n := utf8.RuneCountInString(g.Name); !utf8.ValidString(g.Name) || n == 0 || n > MaxGoalNameLen || strings.TrimSpace(g.Name) == "" {
		fields = append(fields, FieldError{Field: "name", Message: "must be 1-" + strconv.Itoa(MaxGoalNameLen) + " characters of valid UTF-8, not only spaces"})
	}
	if h := g.Window / time.Hour; g.Window%time.Hour != 0 || h < MinGoalWindowHours || h > MaxGoalWindowHours {
		fields = append(fields, FieldError{Field: "window_hours", Message: "must be a whole number of hours from " +
			strconv.Itoa(MinGoalWindowHours) + " to " + strconv.Itoa(MaxGoalWindowHours)})
	}
	if !g.Value.Valid() {
		fields = append(fields, FieldError{Field: "value", Message: "must be none or sum"})
	}
	if c := g.ValueCap; c != nil {
		switch {
		case math.IsNaN(*c) || math.IsInf(*c, 0) || *c <= 0:
			fields = append(fields, FieldError{Field: "value_cap", Message: "must be a positive number, or null for no cap"})
		case g.Value != GoalValueSum:
			fields = append(fields, FieldError{Field: "value_cap", Message: "must be null unless value is sum: a goal without values has nothing to cap"})
		}
	}
	if len(fields) > 0 {
		return &ValidationError{Fields: fields, Of: "goal"}
	}
	return nil
}

// Counts reports whether a conversion at at counts for a phase that first exposed the user at
// exposed: at or after the exposure and within the window, [exposed, exposed+Window).
func (g Goal) Counts(exposed, at time.Time) bool {
	return !at.Before(exposed) && at.Before(exposed.Add(g.Window))
}

// GoalAction is what one write did to a goal, as its history records it.
type GoalAction string

// The actions of a goal's history.
const (
	GoalCreate GoalAction = "create"
	GoalUpdate GoalAction = "update"
	GoalDelete GoalAction = "delete"
)

// GoalChange is one write of a goal, as its history keeps it.
type GoalChange struct {
	Key     string
	Version int64
	At      time.Time
	Actor   Actor
	Action  GoalAction
	// Before and After are the goal before and after the write; nil for none (a create's
	// before, a delete's after).
	Before, After *Goal
}

// The codes of the goal errors.
const (
	CodeGoalNotFound Code = "goal_not_found"
	CodeGoalInUse    Code = "goal_in_use"
)

// ErrGoalNotFound is what a store returns for a goal it does not hold.
var ErrGoalNotFound error = &Error{code: CodeGoalNotFound, msg: "goal not found", answer: "no such goal"}

// ErrGoalKeyTaken is a create of a key another goal has.
var ErrGoalKeyTaken error = &Error{code: CodeNameTaken, msg: "goal key taken",
	answer: "another goal has this key; goal keys are unique", field: "key", fieldMsg: "is the key of another goal"}

// ErrGoalVersionMismatch is a conditional goal write that finds the goal at another version.
var ErrGoalVersionMismatch error = &Error{code: CodeRevisionMismatch, msg: "goal version does not match",
	answer: "the goal has changed since it was read: If-Match does not match its current ETag; read it again and reapply the change"}

// GoalInUse is the error of a write that would delete, or change how it counts, a goal that a
// running experiment decides its verdict on; popups are the ids of those experiments' popups.
func GoalInUse(popups []int64) error {
	ids := make([]string, len(popups))
	for i, id := range popups {
		ids[i] = strconv.FormatInt(id, 10)
	}
	msg := "a running experiment decides on this goal (popups " + strings.Join(ids, ", ") +
		"): stop it, or give it another primary_goal, first"
	return &Error{code: CodeGoalInUse, msg: msg}
}

// UnknownGoal is the error of an experiment whose primary_goal names a goal that does not exist.
func UnknownGoal(field, key string) error {
	msg := "goal " + strconv.Quote(key) + " does not exist"
	return &Error{code: CodeValidationFailed, msg: msg, field: field, answer: fieldSlot + ": " + msg}
}

// SameCap reports whether two caps are equal (both none, or the same number).
func SameCap(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
