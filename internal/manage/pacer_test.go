package manage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPacerKeepsToTheRate: work faster than the rate waits for it, beyond a burst; time not
// spent working lends at most a burst; an unpaced pacer never waits; a wait ends with its
// context.
func TestPacerKeepsToTheRate(t *testing.T) {
	const ms = time.Millisecond
	type step struct {
		work time.Duration // how long the work of n uids took
		n    int
		want time.Duration // the wait after it
	}
	tests := []struct {
		name  string
		rate  int
		steps []step
	}{
		{"unpaced: never waits", 0, []step{{0, 1_000_000, 0}, {0, 1_000_000, 0}}},
		{"within the burst: no wait", 1_000_000, []step{{0, 20_000, 0}}},
		{"past the burst: waits out the rest", 1_000_000, []step{{0, 20_000, 0}, {0, 10_000, 10 * ms}, {0, 10_000, 10 * ms}}},
		{"work as slow as the rate: no wait", 1_000_000, []step{{0, 20_000, 0}, {10 * ms, 10_000, 0}, {10 * ms, 10_000, 0}}},
		{"work slower than the rate: no wait", 1_000_000, []step{{30 * ms, 10_000, 0}, {30 * ms, 10_000, 0}}},
		{"a stall lends one burst, not more", 1_000_000, []step{{0, 20_000, 0}, {0, 10_000, 10 * ms},
			{time.Second, 20_000, 0}, {0, 10_000, 10 * ms}}},
		{"one large piece: waits for all of it", 2_000_000, []step{{0, 40_000, 0}, {0, 131_072, 65536 * time.Microsecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, clk := fakePacer(tt.rate)
			for i, s := range tt.steps {
				clk.now = clk.now.Add(s.work)
				clk.slept = 0
				require.NoError(t, p.wait(context.Background(), s.n))
				assert.Equal(t, s.want, clk.slept, "step %d", i)
			}
		})
	}
}

func TestPacerWaitEndsWithItsContext(t *testing.T) {
	p := newPacer(1, time.Now) // a uid a second: the second uid waits about a second
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, p.wait(ctx, 0))
	err := p.wait(ctx, 10)
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

// TestSortPauseCountsAFractionOfAUid: a paced sort's pieces count at sortPerUID fingerprints a
// uid; an unpaced sort has no pause.
func TestSortPauseCountsAFractionOfAUid(t *testing.T) {
	assert.Nil(t, newPacer(0, time.Now).sortPause(context.Background()))
	p, clk := fakePacer(1_000_000)
	pause := p.sortPause(context.Background())
	require.NoError(t, pause(20_000*sortPerUID)) // the burst
	assert.Zero(t, clk.slept)
	require.NoError(t, pause(1_000_000*sortPerUID))
	assert.Equal(t, time.Second, clk.slept, "8 million fingerprints sorted: a million uids' time")
}

// fakeClock is a pacer's clock that moves only when the pacer sleeps (slept adds up the
// sleeps) or a test moves it.
type fakeClock struct {
	now   time.Time
	slept time.Duration
}

func fakePacer(rate int) (*pacer, *fakeClock) {
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := newPacer(rate, func() time.Time { return clk.now })
	p.sleep = func(_ context.Context, d time.Duration) error {
		clk.slept += d
		clk.now = clk.now.Add(d)
		return nil
	}
	return p, clk
}
