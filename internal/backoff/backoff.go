// Package backoff is the service's one retry schedule: a capped exponential backoff with
// jitter, used by the dependency checks, the first config load, the worker's batch retries and
// the event writer's deadlock retries.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff doubles from Min per attempt up to Max.
type Backoff struct {
	Min, Max time.Duration
}

// Delay is the wait before retry number attempt (0 for the first retry): Min doubled per
// attempt, capped at Max, then drawn at random from its upper half so that many processes that
// failed together do not retry together.
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits Delay(attempt); false when ctx ended first.
func (b Backoff) Sleep(ctx context.Context, attempt int) bool { return Wait(ctx, b.Delay(attempt)) }

// Wait waits for d (not at all when d <= 0); false when ctx ended first.
func Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
