package audience

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testKey() Key { return Key{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} }

// build makes the set of uids under testKey.
func build(t testing.TB, uids []string) *Set {
	t.Helper()
	fps := make([]uint64, len(uids))
	for i, u := range uids {
		fps[i] = Fingerprint(testKey(), u)
	}
	s, err := NewSet(7, 1, testKey(), SortUnique(fps))
	require.NoError(t, err)
	return s
}

func uidRange(prefix string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// TestSetIsExactForAMillionMembers checks every one of a million members and a million uids that
// are not, the "0 wrong answers".
func TestSetIsExactForAMillionMembers(t *testing.T) {
	const n = 1_000_000
	members := uidRange("user-", 0, n)
	s := build(t, members)
	require.Equal(t, n, s.Len())
	wrong := 0
	for _, u := range members {
		if !s.Contains(u) {
			wrong++
		}
	}
	for _, u := range uidRange("user-", n, 2*n) {
		if s.Contains(u) {
			wrong++
		}
	}
	assert.Zero(t, wrong)
	assert.LessOrEqual(t, float64(s.Bytes())/n, BytesPerMember)
}

func TestSetSizes(t *testing.T) {
	tests := []struct {
		name string
		give []string
	}{
		{"empty", nil},
		{"one", []string{"a"}},
		{"one bucket", uidRange("u", 0, bucketTarget)},
		{"two buckets", uidRange("u", 0, 2*bucketTarget+1)},
		{"many", uidRange("u", 0, 10_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := build(t, tt.give)
			assert.Equal(t, len(tt.give), s.Len())
			for i, u := range tt.give {
				assert.True(t, s.Contains(u), u)
				assert.Equal(t, s.Fingerprints()[s.Position(u)], Fingerprint(testKey(), u), i)
			}
			assert.False(t, s.Contains("not-a-member"))
			assert.Equal(t, -1, s.Position("not-a-member"))
		})
	}
}

func TestDuplicatesCountOnce(t *testing.T) {
	s := build(t, []string{"a", "b", "a", "c", "b"})
	assert.Equal(t, 3, s.Len())
}

func TestKeysGiveDifferentFingerprints(t *testing.T) {
	other := testKey()
	other[0] ^= 1
	assert.NotEqual(t, Fingerprint(testKey(), "user-1"), Fingerprint(other, "user-1"))
	assert.Equal(t, Fingerprint(testKey(), "user-1"), Fingerprint(testKey(), "user-1"))
}

func fpsOf(uids ...string) []uint64 {
	out := make([]uint64, len(uids))
	for i, u := range uids {
		out[i] = Fingerprint(testKey(), u)
	}
	return SortUnique(out)
}

func TestApply(t *testing.T) {
	base := []string{"a", "b", "c"}
	tests := []struct {
		name                  string
		give                  Delta
		wantIn, wantOut       []string
		wantAdded, wantRemove int
	}{
		{"add new and existing", Delta{Add: fpsOf("c", "d", "e")}, []string{"a", "b", "c", "d", "e"}, nil, 2, 0},
		{"remove member and stranger", Delta{Remove: fpsOf("b", "zz")}, []string{"a", "c"}, []string{"b"}, 0, 1},
		{"remove all", Delta{Remove: fpsOf("a", "b", "c")}, nil, []string{"a", "b", "c"}, 0, 3},
		{"nothing", Delta{}, base, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := build(t, base)
			next, added, removed, err := s.Apply(2, tt.give)
			require.NoError(t, err)
			assert.Equal(t, int64(2), next.Version())
			assert.Equal(t, tt.wantAdded, added)
			assert.Equal(t, tt.wantRemove, removed)
			assert.Equal(t, len(tt.wantIn), next.Len())
			for _, u := range tt.wantIn {
				assert.True(t, next.Contains(u), u)
			}
			for _, u := range tt.wantOut {
				assert.False(t, next.Contains(u), u)
			}
			assert.Equal(t, 3, s.Len(), "the old set is unchanged")
		})
	}
}

func TestNewSetRefusesUnsorted(t *testing.T) {
	_, err := NewSet(1, 1, testKey(), []uint64{3, 2})
	assert.Error(t, err)
	_, err = NewSet(1, 1, testKey(), []uint64{2, 2})
	assert.Error(t, err)
}

func TestStoredFormRoundTrips(t *testing.T) {
	fps := fpsOf("a", "b", "c")
	got, err := AppendDecoded(nil, AppendFingerprints(nil, fps))
	require.NoError(t, err)
	assert.Equal(t, fps, got)
	_, err = AppendDecoded(nil, []byte{1, 2, 3})
	assert.Error(t, err)
}

func TestSetsNilIsEmpty(t *testing.T) {
	var s *Sets
	assert.Nil(t, s.Get(1))
	assert.Zero(t, s.Len())
}

// BenchmarkContains is the check cost at 10 million members (target ≤ 200 ns): half the
// uids checked are members. The uids are drawn so that successive checks hit unrelated cache
// lines, as requests from different users do.
func BenchmarkContains(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000, 10_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			fps := make([]uint64, n)
			for i := range fps {
				fps[i] = Fingerprint(testKey(), "user-"+strconv.Itoa(2*i))
			}
			s, err := NewSet(1, 1, testKey(), SortUnique(fps))
			require.NoError(b, err)
			probes := uidRange("user-", 0, 1<<16)
			b.ReportAllocs()
			b.ResetTimer()
			hits := 0
			for i := 0; i < b.N; i++ {
				if s.Contains(probes[i&(1<<16-1)]) {
					hits++
				}
			}
			if hits == 0 && b.N > 1 {
				b.Fatal("no member found")
			}
			// (after the loop: ResetTimer clears the metrics reported before it)
			b.ReportMetric(float64(s.Bytes())/float64(n), "bytes/member")
		})
	}
}

func BenchmarkFingerprint(b *testing.B) {
	k := testKey()
	var sink uint64
	for i := 0; i < b.N; i++ {
		sink += Fingerprint(k, "user-1234567")
	}
	_ = sink
}
