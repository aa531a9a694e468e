// Package audience is the in-process membership of an uploaded list of users: an immutable set
// of the uids' keyed 64-bit fingerprints, sorted, with a bucket index in front so that a check
// reads about two cache lines whatever the list's size.
package audience

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/dchest/siphash"
)

// Key keys an audience's fingerprints (SipHash-2-4). Each audience draws its own when it is
// created and keeps it, so a uid's fingerprint is the same in every instance and every version,
// and nobody who lacks the key can craft a uid that collides with a member.
type Key [16]byte

// NewKey draws a random key.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("draw audience key: %w", err)
	}
	return k, nil
}

func (k Key) halves() (uint64, uint64) {
	return binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:])
}

// Fingerprint is the uid's 64-bit fingerprint under k. Two distinct uids of a list of n share one
// with odds of about n/2⁶⁴ for a given uid: that is the only way a check can be wrong.
func Fingerprint(k Key, uid string) uint64 {
	k0, k1 := k.halves()
	return fingerprint(k0, k1, uid)
}

func fingerprint(k0, k1 uint64, uid string) uint64 {
	// siphash only reads p: viewing the string's bytes saves a copy on the request path.
	return siphash.Hash(k0, k1, unsafe.Slice(unsafe.StringData(uid), len(uid)))
}

// Set is the membership of one audience version. It is immutable: a new version is a new Set.
type Set struct {
	id, version int64
	key         Key
	k0, k1      uint64 // key's halves, as siphash takes them: decoded once, not per check
	// fps are the members' fingerprints, sorted and distinct.
	fps []uint64
	// index[b] is the position in fps of the first fingerprint whose top bits are at least b, for
	// b in [0, 2^bits]. The index is small enough to stay in the processor's cache, and a check
	// reads fps only around where its fingerprint would be if the bucket's values were evenly
	// spread (they are nearly: fingerprints are uniform): usually one cache line of fps.
	index []uint32
	shift uint // 64 - bits
}

// bucketTarget is the mean number of fingerprints a bucket of the index holds: its cost is
// 4/bucketTarget bytes a member over the 8 of the fingerprint itself. A larger bucket keeps the
// index in the cache for longer; the estimate inside a bucket of m is off by about √m/2.
const bucketTarget = 128

// MaxMembers is the most fingerprints a Set can index (its positions are 32-bit).
const MaxMembers = 1<<32 - 1

// BytesPerMember is what a Set costs a member at most, index included (for memory budgets).
const BytesPerMember = 8 + 2*4.0/bucketTarget

// YieldEvery is how many fingerprints a long pass over a list (NewSet's check and index, an
// upload's comparison with the set it replaces) handles between two yields to the other
// goroutines: a pass over 20 M takes tens of milliseconds, where the process's requests should
// wait well under one.
const YieldEvery = 1 << 16

// NewSet returns the set of fps (sorted and distinct: SortUnique) for version of audience id,
// fingerprinted under key. It keeps fps; the caller must not change it afterwards.
func NewSet(id, version int64, key Key, fps []uint64) (*Set, error) {
	if len(fps) > MaxMembers {
		return nil, fmt.Errorf("audience %d: %d members, more than %d", id, len(fps), MaxMembers)
	}
	for i := 1; i < len(fps); i++ {
		if fps[i] <= fps[i-1] {
			return nil, errors.New("audience fingerprints must be sorted and distinct")
		}
		if i%YieldEvery == 0 {
			runtime.Gosched()
		}
	}
	s := &Set{id: id, version: version, key: key, fps: fps}
	s.k0, s.k1 = key.halves()
	nbits := 0
	if n := len(fps) / bucketTarget; n > 1 {
		nbits = bits.Len(uint(n - 1)) // the smallest power of two at least n
	}
	s.shift = uint(64 - nbits)
	s.index = make([]uint32, 1<<nbits+1)
	b := 0
	for i, fp := range fps {
		for top := int(fp >> s.shift); b <= top; b++ {
			s.index[b] = uint32(i)
		}
		if i%YieldEvery == YieldEvery-1 {
			runtime.Gosched()
		}
	}
	for ; b < len(s.index); b++ {
		s.index[b] = uint32(len(fps))
	}
	return s, nil
}

// ID is the audience's id.
func (s *Set) ID() int64 { return s.id }

// Version is the audience version the set holds.
func (s *Set) Version() int64 { return s.version }

// Len is the number of members.
func (s *Set) Len() int { return len(s.fps) }

// Bytes is the memory the set holds.
func (s *Set) Bytes() int64 { return int64(len(s.fps))*8 + int64(len(s.index))*4 }

// BytesOrZero is Bytes, 0 for a nil set.
func (s *Set) BytesOrZero() int64 {
	if s == nil {
		return 0
	}
	return s.Bytes()
}

// Contains reports whether uid is a member. It does not allocate.
func (s *Set) Contains(uid string) bool {
	return s.has(fingerprint(s.k0, s.k1, uid))
}

func (s *Set) has(fp uint64) bool {
	i, lo, hi := s.estimate(fp)
	if i < 0 {
		return false
	}
	return s.fps[s.settle(fp, i, lo, hi)] == fp
}

// estimate is where fp would be in fps: its bucket [lo, hi) from the index, then the position in
// the bucket that fp's place among the bucket's values gives, as the fingerprints are uniform.
// i is -1 for an empty bucket.
func (s *Set) estimate(fp uint64) (i, lo, hi int) {
	b := fp >> s.shift // (a shift by 64, for a set of one bucket, is 0)
	lo, hi = int(s.index[b]), int(s.index[b+1])
	if lo == hi {
		return -1, lo, hi
	}
	// fp's offset in the bucket's range, as a fraction of 2^64, times the bucket's size.
	off, _ := bits.Mul64(fp<<(64-s.shift), uint64(hi-lo))
	return lo + int(off), lo, hi
}

// settle walks from the estimate i to the first position of [lo, hi) holding fp or more (hi-1
// when none does): a few steps, in the cache lines around i.
func (s *Set) settle(fp uint64, i, lo, hi int) int {
	for i+1 < hi && s.fps[i] < fp {
		i++
	}
	for i > lo && s.fps[i-1] >= fp {
		i--
	}
	return i
}

// Key is the key the set's fingerprints are made with.
func (s *Set) Key() Key { return s.key }

// Fingerprints returns the sorted fingerprints; the caller must not change them.
func (s *Set) Fingerprints() []uint64 { return s.fps }

// Position returns the index of uid's fingerprint in Fingerprints, or -1 when uid is not a
// member: a reader streaming the list back marks the positions it has written, so that a uid
// uploaded twice comes back once.
func (s *Set) Position(uid string) int {
	fp := fingerprint(s.k0, s.k1, uid)
	i, lo, hi := s.estimate(fp)
	if i < 0 {
		return -1
	}
	if i = s.settle(fp, i, lo, hi); s.fps[i] == fp {
		return i
	}
	return -1
}

// Delta is a change of a set: fingerprints to add and to remove, each sorted and distinct.
type Delta struct {
	Add, Remove []uint64
}

// Apply returns the set of version with d applied (its additions, then its removals), and how
// many fingerprints it really added (not members before) and removed (members until then).
// s is unchanged.
func (s *Set) Apply(version int64, d Delta) (next *Set, added, removed int, err error) {
	union := make([]uint64, 0, len(s.fps)+len(d.Add))
	i, j := 0, 0
	for i < len(s.fps) && j < len(d.Add) {
		switch a, b := s.fps[i], d.Add[j]; {
		case a < b:
			union = append(union, a)
			i++
		case b < a:
			union = append(union, b)
			j++
		default:
			union = append(union, a)
			i++
			j++
		}
	}
	union = append(append(union, s.fps[i:]...), d.Add[j:]...)
	out := union[:0]
	r := 0
	for _, fp := range union {
		for r < len(d.Remove) && d.Remove[r] < fp {
			r++
		}
		if r < len(d.Remove) && d.Remove[r] == fp {
			continue
		}
		out = append(out, fp)
	}
	next, err = NewSet(s.id, version, s.key, out)
	return next, len(union) - len(s.fps), len(union) - len(out), err
}

// SortUnique sorts fps and drops repeats, in place, and returns the distinct prefix.
func SortUnique(fps []uint64) []uint64 {
	slices.Sort(fps)
	return slices.Compact(fps)
}

// AppendFingerprints appends fps to dst as 8 big-endian bytes each (the stored form).
func AppendFingerprints(dst []byte, fps []uint64) []byte {
	for _, fp := range fps {
		dst = binary.BigEndian.AppendUint64(dst, fp)
	}
	return dst
}

// AppendDecoded appends the fingerprints stored in b (AppendFingerprints) to dst.
func AppendDecoded(dst []uint64, b []byte) ([]uint64, error) {
	if len(b)%8 != 0 {
		return dst, fmt.Errorf("stored fingerprints: %d bytes, not a multiple of 8", len(b))
	}
	for i := 0; i < len(b); i += 8 {
		dst = append(dst, binary.BigEndian.Uint64(b[i:]))
	}
	return dst, nil
}

// Sets is the immutable collection of audience sets a snapshot serves, by audience id.
type Sets struct {
	// Gen increases with every change of the collection, so that a snapshot built on newer sets
	// replaces one of the same config version built on older ones.
	Gen uint64
	m   map[int64]*Set
	// FailClosed counts the checks answered without the set (not loaded): it is shared by every
	// generation of one loader.
	FailClosed *atomic.Uint64
}

// NewSets returns the collection m (kept; not to be changed afterwards) of generation gen.
func NewSets(gen uint64, m map[int64]*Set, failClosed *atomic.Uint64) *Sets {
	return &Sets{Gen: gen, m: m, FailClosed: failClosed}
}

// Get returns audience id's set, nil when s does not hold it (or s is nil).
func (s *Sets) Get(id int64) *Set {
	if s == nil {
		return nil
	}
	return s.m[id]
}

// Map returns the sets by audience id; the caller must not change it.
func (s *Sets) Map() map[int64]*Set {
	if s == nil {
		return nil
	}
	return s.m
}

// Len is the number of sets held.
func (s *Sets) Len() int {
	if s == nil {
		return 0
	}
	return len(s.m)
}

// Each calls fn for every set held.
func (s *Sets) Each(fn func(*Set)) {
	if s == nil {
		return
	}
	for _, set := range s.m {
		fn(set)
	}
}
