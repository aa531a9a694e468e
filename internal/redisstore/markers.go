package redisstore

import (
	"context"
	"encoding/binary"
	"strconv"
	"time"
	"unsafe"

	"github.com/dchest/siphash"
	"github.com/redis/go-redis/v9"

	"popupsvc/internal/privacy"
)

// Remembered event ids ("applied once" markers), compactly (docs/CONTRACT.md §3, §6): an action's
// or a conversion's (uid, event id) is remembered as an 8-byte keyed fingerprint, a field of a
// small hash shared with other users' fingerprints of the same time generation:
//
//	P:{qN}:m:GEN:B   fingerprints of the generation GEN (unix time / RetryWindow) and bucket B
//
// A hash of at most a hundred or so short fields is stored as a listpack, about 12 bytes an
// entry, where a key per marker took 88 (docs/SCALING.md). A generation's keys all expire two
// generations after it began, so a fingerprint lives from RetryWindow to twice that: the retry
// window the contract promises is RetryWindow. A record checks the generations before, of and
// after its own clock's (an instance whose clock is a little behind another's still finds what
// that one wrote) and writes into its own.
//
// The fingerprint is SipHash-2-4 of (namespace, uid, event id) under a key drawn from
// POPUP_PRIVACY_KEY when it is set: without the key a marker says nothing about the uid, so an
// erasure leaves it in place and it goes on refusing a retry of the erased user's old action
// (docs/CONTRACT.md §12). Two pairs share a fingerprint with odds of about 2⁻⁶⁴ per pair met in
// one bucket: the only way a new action is taken for a retry.
//
// The previous release's markers (a key per marker, EventIDTTL, Keys.EventID and ConversionID,
// and their erased stand-ins, Keys.Erased) are still honoured: a record checks them too, so a
// retry of an action taken before the upgrade is refused for the whole day it was promised.

// RetryWindow is how long, at least, a recorded action's or conversion's event id is remembered:
// a retry within it is applied once. A marker lives up to twice as long.
const RetryWindow = 3 * time.Hour

// markerSkew is how long a generation's keys outlive their two generations: an instance whose
// clock runs ahead may write into a generation before the others reach it.
const markerSkew = time.Minute

// MarkerBuckets is how many hashes each generation's fingerprints spread over, all queue shards
// together: enough that a hash stays under Redis's hash-max-listpack-entries (128), past which it
// is stored as a table at several times the bytes, up to about twice the model's 5,000 actions a
// second (docs/SCALING.md); a key costs its few dozen bytes only once it holds a fingerprint.
const MarkerBuckets = 1 << 20

// Marker namespaces: the event ids of actions and of conversions are separate.
const (
	markerAction     = 'e'
	markerConversion = 'o'
)

// markers computes where a (uid, event id) is remembered.
type markers struct {
	keys    Keys
	k0, k1  uint64
	buckets uint64 // per queue shard
	window  int64  // RetryWindow in ms
}

func newMarkers(keys Keys, key [16]byte, total int) markers {
	shards := max(keys.Shards, 1)
	return markers{keys: keys, k0: binary.LittleEndian.Uint64(key[:8]), k1: binary.LittleEndian.Uint64(key[8:]),
		buckets: uint64(max(total/shards, 1)), window: RetryWindow.Milliseconds()}
}

// markerRef is a marker's place: the keys of the three generations it is looked for in (before,
// of and after the caller's clock; the middle one is where it is written), its field, and when
// the written generation's keys expire (unix ms).
type markerRef struct {
	gens     [3]string
	field    string
	expireAt int64
}

// ref returns the place of namespace ns's (uid, id) at now. Its four strings share one
// allocation: a record's allocations are most of what it costs popup-api.
func (m markers) ref(ns byte, uid, id string, now time.Time) markerRef {
	var b [1 + 64 + 1 + 64]byte
	in := append(b[:0], ns)
	in = append(in, uid...)
	in = append(in, '/')
	in = append(in, id...)
	fp := siphash.Hash(m.k0, m.k1, in)
	gen := now.UnixMilli() / m.window
	bucket := (fp >> 32) % m.buckets
	shard := m.keys.Shard(uid)
	buf := make([]byte, 0, 3*(len(m.keys.Prefix)+48)+8)
	var ends [4]int
	for i := range 3 {
		buf = m.appendKey(buf, shard, gen-1+int64(i), bucket)
		ends[i] = len(buf)
	}
	buf = binary.BigEndian.AppendUint64(buf, fp)
	ends[3] = len(buf)
	all := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
	r := markerRef{expireAt: (gen+2)*m.window + markerSkew.Milliseconds()}
	r.gens[0], r.gens[1], r.gens[2] = all[:ends[0]], all[ends[0]:ends[1]], all[ends[1]:ends[2]]
	r.field = all[ends[2]:ends[3]]
	return r
}

// key is the hash of generation gen and bucket in shard.
func (m markers) key(shard int, gen int64, bucket uint64) string {
	return string(m.appendKey(nil, shard, gen, bucket))
}

func (m markers) appendKey(dst []byte, shard int, gen int64, bucket uint64) []byte {
	dst = m.keys.appendShard(dst, shard)
	dst = append(dst, "m:"...)
	dst = strconv.AppendInt(dst, gen, 10)
	dst = append(dst, ':')
	return strconv.AppendUint(dst, bucket, 10)
}

// defaultMarkerKey keys the fingerprints without POPUP_PRIVACY_KEY (erasures are off then).
var defaultMarkerKey = [16]byte{'p', 'o', 'p', 'u', 'p', ' ', 'm', 'a', 'r', 'k', 'e', 'r', 's', ' ', 'v', '1'}

// ActionRemembered reports whether rdb remembers uid's action event id at now, as the UserStore
// of keys, with erasures keyed by keyed (nil: POPUP_PRIVACY_KEY unset), would find it: for tests
// and tools that look at what a record left.
func ActionRemembered(ctx context.Context, rdb redis.Cmdable, keys Keys, keyed *privacy.Keyed, uid, eventID string, now time.Time) (bool, error) {
	key := defaultMarkerKey
	if keyed != nil {
		key = keyed.MarkerKey()
	}
	r := newMarkers(keys, key, MarkerBuckets).ref(markerAction, uid, eventID, now)
	for _, g := range r.gens {
		ok, err := rdb.HExists(ctx, g, r.field).Result()
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}
