package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppendRawWritesEachAnsweredSlotWithItsSendTime: one line per answered slot, its intended
// send time (start plus the slot's place in the schedule) and its latency, in slot order; a failed
// slot is left out; a second run appends.
func TestAppendRawWritesEachAnsweredSlotWithItsSendTime(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lat")
	start := time.Unix(100, 0)
	require.NoError(t, appendRaw(file, start, float64(2*time.Millisecond), []time.Duration{3 * time.Millisecond, -1, 500 * time.Microsecond}))
	require.NoError(t, appendRaw(file, start.Add(time.Second), float64(time.Millisecond), []time.Duration{time.Millisecond}))

	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "100000000000 3000000\n100004000000 500000\n101000000000 1000000\n", string(b))
}
