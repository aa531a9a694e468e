package audience

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBufferSortsUniqueAndSpillsPastItsRoom: the fingerprints come back sorted and distinct,
// whether they fit the room reserved or spill past it onto the heap.
func TestBufferSortsUniqueAndSpillsPastItsRoom(t *testing.T) {
	tests := []struct {
		name string
		room int
		give []uint64
		want []uint64
	}{
		{"within its room", 8, []uint64{5, 3, 5, 1}, []uint64{1, 3, 5}},
		{"past its room", 2, []uint64{9, 7, 9, 8, 7, 1}, []uint64{1, 7, 8, 9}},
		{"no room", 0, []uint64{2, 2}, []uint64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuffer(tt.room)
			defer b.Free()
			for _, fp := range tt.give {
				b.Append(fp)
			}
			b.SortUnique()
			assert.Equal(t, tt.want, b.Fingerprints())
			b.Free()
			assert.Zero(t, b.Len())
			b.Free() // twice is harmless
		})
	}
}

// TestBufferLeavesTheProcessOnFree: a buffer's pages are resident only once written, and leave
// the process when it is freed, with no collection.
func TestBufferLeavesTheProcessOnFree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	const n = 8 << 20 // 64 MiB of fingerprints
	before := rssKiB(t)
	b := NewBuffer(4 * n) // room for 256 MiB, nothing written yet
	assert.Less(t, rssKiB(t)-before, int64(16<<10), "reserving the room made it resident")
	for i := range n {
		b.Append(uint64(i))
	}
	full := rssKiB(t)
	assert.Greater(t, full-before, int64(48<<10), "64 MiB written, yet not resident")
	b.Free()
	assert.Less(t, rssKiB(t), full-int64(48<<10), "freed, yet still resident")
}

// rssKiB is this process's resident set, in KiB.
func rssKiB(t *testing.T) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
