package decide

import (
	"context"
	"fmt"
	"time"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

// Conversions (docs/CONTRACT.md §14): a user reaching a goal, reported by the app or by a backend,
// queued durably with the user's display events, for the worker to attribute to the experiment
// phases that exposed the user.

// ConversionQueue queues conversions (redisstore.UserStore): a replayed (uid, event id) is
// popup.Duplicate, a uid over the action rate limit popup.RateLimited.
type ConversionQueue interface {
	RecordConversion(ctx context.Context, ev *event.Event) (popup.Outcome, error)
}

// GoalSet says whether a conversion may name goal key; ErrUnavailable before it knows the goals.
type GoalSet interface {
	HasGoal(key string) (bool, error)
}

// Conversion is one conversion as reported.
type Conversion struct {
	UID     string
	Goal    string
	EventID string
	Value   float64
	At      time.Time // when it happened: at most MaxConversionAge before now, never after it
}

// MaxConversionAge is how late a conversion may be reported (a backend's late server events).
const MaxConversionAge = 7 * 24 * time.Hour

// UnknownGoalError is a conversion naming a goal that does not exist; Index is its place in the
// request. All lists every such conversion of the request, in order (the first is Index's).
type UnknownGoalError struct {
	Index int
	Goal  string
	All   []UnknownGoal
}

// UnknownGoal is one conversion of a request that names a goal that does not exist.
type UnknownGoal struct {
	Index int
	Goal  string
}

func (e *UnknownGoalError) Error() string { return "goal " + e.Goal + " does not exist" }

// Convert queues cs at now: all of them are checked first (unknown goals refuse the whole
// request with *UnknownGoalError naming every one, nothing queued), then each is queued in order. A conversion
// queued before is applied once (its retry is acknowledged). A uid over its rate limit refuses
// only its own conversions: the others are queued, and *RateLimitedError names the refused ones.
// ErrUnavailable or ErrClientGone stop at the conversion that met them, those before it queued: a
// retry of the whole request with the same event ids applies each once.
func (d *Decider) Convert(ctx context.Context, cs []Conversion, now time.Time) error {
	if d.Conversions == nil || d.Goals == nil {
		return ErrUnavailable
	}
	var unknown []UnknownGoal
	for i := range cs {
		ok, err := d.Goals.HasGoal(cs[i].Goal)
		if err != nil {
			return err
		}
		if !ok {
			unknown = append(unknown, UnknownGoal{Index: i, Goal: cs[i].Goal})
		}
	}
	if len(unknown) > 0 {
		return &UnknownGoalError{Index: unknown[0].Index, Goal: unknown[0].Goal, All: unknown}
	}
	bctx, cancel := context.WithTimeout(ctx, 4*d.Budget)
	defer cancel()
	var limited []int
	var limitedUIDs map[string]bool
	for i := range cs {
		c := &cs[i]
		if limitedUIDs[c.UID] {
			limited = append(limited, i) // its uid is over the limit already: not queued
			continue
		}
		br := d.Breakers.For(c.UID)
		if !br.Allow(now) {
			return ErrUnavailable
		}
		ev := event.Event{ID: c.EventID, UID: c.UID, Action: event.Conversion, At: c.At, Goal: c.Goal, Value: c.Value}
		out, err := d.Conversions.RecordConversion(bctx, &ev)
		if err != nil {
			return d.storeFailed(ctx, br, now, opRecordConversion, err)
		}
		br.Success()
		if out == popup.RateLimited {
			if limitedUIDs == nil {
				limitedUIDs = map[string]bool{}
			}
			limitedUIDs[c.UID] = true
			limited = append(limited, i)
		}
	}
	if len(limited) > 0 {
		return &RateLimitedError{Indexes: limited}
	}
	return nil
}

// RateLimitedError says which conversions of a request were not queued because their uid is
// over its rate limit (by index, in order); every other conversion of the request was queued. It
// is an ErrRateLimited (errors.Is).
type RateLimitedError struct{ Indexes []int }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%d conversion(s) rate limited, the others queued", len(e.Indexes))
}

func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }
