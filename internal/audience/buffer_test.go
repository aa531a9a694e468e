package audience

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
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
			require.NoError(t, b.SortUnique(nil))
			assert.Equal(t, tt.want, b.Fingerprints())
			b.Free()
			assert.Zero(t, b.Len())
			b.Free() // twice is harmless
		})
	}
}

// TestSortPausesBetweenPieces: a sort with a pause sorts as an unpaused one does, whatever the
// spread of the top bytes, pausing between pieces of about sortPiece; an error from the pause
// ends it.
func TestSortPausesBetweenPieces(t *testing.T) {
	const n = sortPiece + sortPiece/2
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		fp   func(i int) uint64
	}{
		{"uniform", func(int) uint64 { return r.Uint64() }},
		{"one top byte", func(int) uint64 { return 0xab<<56 | r.Uint64()>>8 }},
		{"two top bytes, repeats", func(i int) uint64 { return uint64(i%2)<<63 | uint64(r.IntN(1000)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuffer(n)
			defer b.Free()
			want := make([]uint64, n)
			for i := range want {
				want[i] = tt.fp(i)
				b.Append(want[i])
			}
			slices.Sort(want)
			want = slices.Compact(want)
			var pauses, covered int
			require.NoError(t, b.SortUnique(func(k int) error {
				pauses++
				covered += k
				return nil
			}))
			assert.Equal(t, want, b.Fingerprints())
			assert.GreaterOrEqual(t, pauses, 2, "pauses")
			assert.GreaterOrEqual(t, covered, n, "the pieces cover every fingerprint")
		})
	}
	t.Run("an error from the pause ends it", func(t *testing.T) {
		b := NewBuffer(n)
		defer b.Free()
		for range n {
			b.Append(r.Uint64())
		}
		stop := errors.New("stop")
		assert.ErrorIs(t, b.SortUnique(func(int) error { return stop }), stop)
	})
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
