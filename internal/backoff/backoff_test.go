package backoff

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDelayDoublesWithJitterUpToTheCap(t *testing.T) {
	t.Parallel()
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{attempt: 0, min: 50 * time.Millisecond, max: 100 * time.Millisecond},
		{attempt: 1, min: 100 * time.Millisecond, max: 200 * time.Millisecond},
		{attempt: 3, min: 400 * time.Millisecond, max: 800 * time.Millisecond},
		{attempt: 4, min: 500 * time.Millisecond, max: time.Second},
		{attempt: 1000, min: 500 * time.Millisecond, max: time.Second},
	}
	for _, tt := range tests {
		for range 100 {
			d := b.Delay(tt.attempt)
			assert.GreaterOrEqual(t, d, tt.min, "attempt %d", tt.attempt)
			assert.LessOrEqual(t, d, tt.max, "attempt %d", tt.attempt)
		}
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, Backoff{Min: time.Hour, Max: time.Hour}.Sleep(ctx, 0))
	assert.True(t, Backoff{Min: time.Microsecond, Max: time.Microsecond}.Sleep(context.Background(), 3))
}
