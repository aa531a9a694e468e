package decide

import (
	"context"
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
// request.
type UnknownGoalError struct {
	Index int
	Goal  string
}

func (e *UnknownGoalError) Error() string { return "goal " + e.Goal + " does not exist" }

// Convert queues cs at now: all of them are checked first (an unknown goal refuses the whole
// request with *UnknownGoalError, nothing queued), then each is queued in order. A conversion
// queued before is applied once (its retry is acknowledged); ErrRateLimited, ErrUnavailable or
// ErrClientGone stop at the conversion that met them, those before it queued: a retry of the
// whole request with the same event ids applies each once.
func (d *Decider) Convert(ctx context.Context, cs []Conversion, now time.Time) error {
	if d.Conversions == nil || d.Goals == nil {
		return ErrUnavailable
	}
	for i := range cs {
		ok, err := d.Goals.HasGoal(cs[i].Goal)
		if err != nil {
			return err
		}
		if !ok {
			return &UnknownGoalError{Index: i, Goal: cs[i].Goal}
		}
	}
	bctx, cancel := context.WithTimeout(ctx, 4*d.Budget)
	defer cancel()
	for i := range cs {
		c := &cs[i]
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
			return ErrRateLimited
		}
	}
	return nil
}
