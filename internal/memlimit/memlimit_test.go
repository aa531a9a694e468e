package memlimit

import (
	"math"
	"testing"
	"time"

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

// TestDroppedSetsAreHandedBack: sets held dropping by Headroom or more schedule one release
// ReleaseDelay later, and the limit is set again from the live heap it leaves; a smaller drop,
// or a growth, schedules none.
func TestDroppedSetsAreHandedBack(t *testing.T) {
	const mib = 1 << 20
	live := int64(400 * mib)
	var pending []func()
	var delays []time.Duration
	releases := 0
	g := &Governor{ceiling: math.MaxInt64, limit: math.MaxInt64,
		setLimit: func(int64) int64 { return 0 }, liveHeap: func() int64 { return live },
		release: func() { releases++; live = 40 * mib },
		after:   func(d time.Duration, f func()) { delays = append(delays, d); pending = append(pending, f) }}

	g.Held(170 * mib)
	g.Held(100 * mib) // 70 MiB less: under Headroom
	assert.Empty(t, pending, "a drop under Headroom")
	g.Held(8 * mib) // 92 MiB less
	g.Held(170 * mib)
	assert.Empty(t, pending, "the drops are counted from one Held to the next")

	g.Held(8 * mib) // 162 MiB less
	g.Held(200 * mib)
	g.Held(16 * mib) // a second drop while the first release waits
	if assert.Len(t, pending, 1, "one release at a time") {
		assert.Equal(t, ReleaseDelay, delays[0])
		assert.Equal(t, int64(16*mib+2*(400*mib-16*mib)), g.Limit(), "before the release: room for the old live heap")
		pending[0]()
		assert.Equal(t, 1, releases)
		assert.Equal(t, int64(16*mib+Headroom), g.Limit(), "after it: from the live heap the collection left")
	}
	g.Held(170 * mib)
	g.Held(8 * mib)
	assert.Len(t, pending, 2, "a later drop schedules another")
}
