package memlimit

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLimitFollowsTheSetsHeld: the limit is the sets' bytes plus room, capped by the limit the
// process started with, lifted while a set loads, and the process's own without sets.
func TestLimitFollowsTheSetsHeld(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name          string
		ceiling, live int64
		held          int64
		loading       bool
		want          int64
	}{
		{"no sets: the limit the process started with", math.MaxInt64, 30 * mib, 0, false, math.MaxInt64},
		{"sets: their bytes and the headroom", math.MaxInt64, 190 * mib, 160 * mib, false, 160*mib + Headroom},
		{"a large rest of the heap: twice it", math.MaxInt64, 300 * mib, 160 * mib, false, 160*mib + 280*mib},
		{"never above GOMEMLIMIT", 200 * mib, 190 * mib, 160 * mib, false, 200 * mib},
		{"while a set loads: for both", math.MaxInt64, 130 * mib, 60 * mib, true, 100*mib + 60*mib + Headroom},
		{"while a set loads: never above GOMEMLIMIT", 200 * mib, 130 * mib, 160 * mib, true, 200 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime := tt.ceiling // the runtime's limit, as GOMEMLIMIT set it
			g := &Governor{ceiling: tt.ceiling, limit: tt.ceiling,
				setLimit: func(l int64) int64 { runtime = l; return 0 }, liveHeap: func() int64 { return tt.live }}
			g.Held(100 * mib) // the sets held to start from
			if tt.loading {
				g.Loading(tt.held)
			} else {
				g.Held(tt.held)
			}
			assert.Equal(t, tt.want, g.Limit())
			assert.Equal(t, tt.want, runtime, "the runtime's limit")
		})
	}
}
