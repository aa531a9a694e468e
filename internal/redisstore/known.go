package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// KnownUsers is a Bloom filter, kept in Redis, of every uid that may have durable state in MySQL:
// on a Redis miss of a user's state, a uid the filter has never seen is a new user, answered
// with an empty state and no SQL; only a "maybe" pays the MySQL load (docs/CONTRACT.md §6).
//
// There is one filter per queue shard, in the shard's hash slot, so that the record script adds
// a uid to it atomically with the user's first recorded state and event. Its key names its size
// (P:{qN}:known:M:K), so a popup-api and a popup-worker configured differently never read each
// other's bits. Its first 16 bytes are a header:
//
//	bytes 0-7  the id of the rebuild that filled it (0: none yet)
//	byte  8    1 once a rebuild from MySQL finished: only then is a "no" trusted
//
// A filter Redis lost (a flush, a restart without persistence, eviction) comes back empty, with
// no complete flag: every miss loads from MySQL until the worker's rebuild has scanned the state
// table and set the flag again. A rebuild checks its id at every step, so a filter lost during
// one is never declared complete.
type KnownUsers struct {
	Keys Keys
	Bits uint64 // filter bits per shard (after the header)
	K    int    // bits per uid
}

// knownHeaderBits is where the filter's bits start: after the 16-byte header.
const knownHeaderBits = 128

// NewKnownUsers sizes a filter for expected uids at false-positive rate fp, spread over the
// shards of keys: m = -n·ln(fp)/ln(2)² bits, k = m/n·ln(2) bits per uid.
func NewKnownUsers(keys Keys, expected int, fp float64) (*KnownUsers, error) {
	if expected <= 0 || fp <= 0 || fp >= 1 {
		return nil, fmt.Errorf("known users: expected %d must be > 0 and false-positive rate %g in (0, 1)", expected, fp)
	}
	shards := max(keys.Shards, 1)
	m := math.Ceil(-float64(expected) * math.Log(fp) / (math.Ln2 * math.Ln2))
	perShard := uint64(math.Ceil(m / float64(shards)))
	k := int(math.Round(m / float64(expected) * math.Ln2))
	return &KnownUsers{Keys: keys, Bits: max(perShard, 64), K: max(k, 1)}, nil
}

// Bytes is the filter's memory in Redis over all shards.
func (f *KnownUsers) Bytes() uint64 {
	return uint64(max(f.Keys.Shards, 1)) * (f.Bits + knownHeaderBits + 7) / 8
}

// Key is the filter of shard.
func (f *KnownUsers) Key(shard int) string {
	return f.Keys.shardKey(shard, "known:"+strconv.FormatUint(f.Bits, 10)+":"+strconv.Itoa(f.K))
}

// LeaseKey is held by the worker rebuilding shard's filter.
func (f *KnownUsers) LeaseKey(shard int) string { return f.Key(shard) + ":lease" }

// appendOffsets appends the K bit offsets of uid to dst (double hashing of a 64-bit FNV-1a and
// its mix, Kirsch and Mitzenmacher).
func (f *KnownUsers) appendOffsets(dst []any, uid string) []any {
	h1 := uint64(14695981039346656037)
	for i := 0; i < len(uid); i++ {
		h1 ^= uint64(uid[i])
		h1 *= 1099511628211
	}
	h2 := h1 ^ (h1 >> 33)
	h2 *= 0xff51afd7ed558ccd
	h2 ^= h2 >> 33
	h2 |= 1
	for i := 0; i < f.K; i++ {
		dst = append(dst, knownHeaderBits+(h1+uint64(i)*h2)%f.Bits)
	}
	return dst
}

// KnownAnswer is what the filter says about a uid whose state Redis does not hold.
type KnownAnswer int

// Answers of the filter.
const (
	KnownUntrusted KnownAnswer = iota // the filter is not complete: ask MySQL
	KnownNew                          // never seen: no durable state
	KnownMaybe                        // seen, or a false positive: ask MySQL
)

// knownAddScript sets bits of a filter. With ARGV[1] not empty, only while the filter's rebuild
// id is ARGV[1] (a rebuild's step: it refreshes the rebuild's lease too); returns 0 when the
// filter is no longer that rebuild's, and then drops the lease if the rebuild still holds it (a
// filter lost mid-rebuild is rebuilt at the next check, not after the lease runs out).
//
//	KEYS[1] filter  KEYS[2] lease (a rebuild's step)  ARGV[1] rebuild id or ''  ARGV[2] lease ms  ARGV[3..] offsets
var knownAddScript = redis.NewScript(`
if ARGV[1] ~= '' then
  if redis.call('GETRANGE', KEYS[1], 0, 7) ~= ARGV[1] then
    if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
    return 0
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
for i = 3, #ARGV do redis.call('SETBIT', KEYS[1], ARGV[i], 1) end
return 1
`)

// knownBeginScript starts a rebuild of an incomplete filter, keeping the bits it holds (uids
// recorded since it was lost): writes the rebuild id, clears the complete flag. Returns 1 if
// begun, 0 if the filter is complete (nothing to do) or another worker holds the lease.
//
//	KEYS[1] filter  KEYS[2] lease  ARGV[1] rebuild id  ARGV[2] lease ms
var knownBeginScript = redis.NewScript(`
if redis.call('GETRANGE', KEYS[1], 8, 8) == '\1' then return 0 end
if not redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return 0 end
redis.call('SETRANGE', KEYS[1], 0, ARGV[1] .. '\0')
return 1
`)

// knownFinishScript marks a filter complete if it is still the rebuild's, and drops the lease
// if the rebuild holds it, either way.
//
//	KEYS[1] filter  KEYS[2] lease  ARGV[1] rebuild id
var knownFinishScript = redis.NewScript(`
local ours = redis.call('GETRANGE', KEYS[1], 0, 7) == ARGV[1]
if ours then redis.call('SETRANGE', KEYS[1], 8, '\1') end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
if ours then return 1 end
return 0
`)

// knownAbandonScript drops a rebuild's lease if the rebuild still holds it.
//
//	KEYS[1] lease  ARGV[1] rebuild id
var knownAbandonScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`)

// Complete reports whether shard's filter is complete (trusted).
func (f *KnownUsers) Complete(ctx context.Context, rdb redis.UniversalClient, shard int) (bool, error) {
	flag, err := rdb.GetRange(ctx, f.Key(shard), 8, 8).Result()
	if err != nil {
		return false, fmt.Errorf("known users: read flag: %w", err)
	}
	return flag == "\x01", nil
}

// Add adds uids (all of one shard) to shard's filter.
func (f *KnownUsers) Add(ctx context.Context, rdb redis.UniversalClient, shard int, uids []string) error {
	_, err := f.add(ctx, rdb, shard, "", 0, uids)
	return err
}

func (f *KnownUsers) add(ctx context.Context, rdb redis.UniversalClient, shard int, id string, leaseMS int64, uids []string) (bool, error) {
	if len(uids) == 0 && id == "" {
		return true, nil
	}
	args := make([]any, 0, 2+len(uids)*f.K)
	args = append(args, id, leaseMS)
	for _, uid := range uids {
		args = f.appendOffsets(args, uid)
	}
	n, err := knownAddScript.Run(ctx, rdb, []string{f.Key(shard), f.LeaseKey(shard)}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("known users: add: %w", err)
	}
	return n == 1, nil
}

// Rebuild is one worker's rebuild of a shard's filter.
type Rebuild struct {
	f       *KnownUsers
	rdb     redis.UniversalClient
	shard   int
	id      string
	leaseMS int64
}

// BeginRebuild starts rebuilding shard's filter when it is incomplete and no other worker holds
// its lease; nil when there is nothing for this worker to do.
func (f *KnownUsers) BeginRebuild(ctx context.Context, rdb redis.UniversalClient, shard int, leaseMS int64) (*Rebuild, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	b[0] |= 1 // never the all-zero id of a filter no rebuild has touched
	id := string(b[:])
	n, err := knownBeginScript.Run(ctx, rdb, []string{f.Key(shard), f.LeaseKey(shard)}, id, leaseMS).Int()
	if err != nil {
		return nil, fmt.Errorf("known users: begin rebuild: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	return &Rebuild{f: f, rdb: rdb, shard: shard, id: id, leaseMS: leaseMS}, nil
}

// Shard is the shard being rebuilt.
func (r *Rebuild) Shard() int { return r.shard }

// Add adds uids of the rebuild's shard; false means the filter is no longer this rebuild's (it
// was lost, or another worker took over): stop.
func (r *Rebuild) Add(ctx context.Context, uids []string) (bool, error) {
	return r.f.add(ctx, r.rdb, r.shard, r.id, r.leaseMS, uids)
}

// Abandon gives up the rebuild (a failed step: MySQL or Redis refused): its lease is dropped if
// it still holds it, so that the next check begins again instead of waiting for the lease to
// run out. The bits it set stay; the filter stays incomplete.
func (r *Rebuild) Abandon(ctx context.Context) error {
	if err := knownAbandonScript.Run(ctx, r.rdb, []string{r.f.LeaseKey(r.shard)}, r.id).Err(); err != nil {
		return fmt.Errorf("known users: abandon rebuild: %w", err)
	}
	return nil
}

// Finish marks the filter complete; false means it is no longer this rebuild's.
func (r *Rebuild) Finish(ctx context.Context) (bool, error) {
	n, err := knownFinishScript.Run(ctx, r.rdb, []string{r.f.Key(r.shard), r.f.LeaseKey(r.shard)}, r.id).Int()
	if err != nil {
		return false, fmt.Errorf("known users: finish rebuild: %w", err)
	}
	return n == 1, nil
}

// checkCmd is the filter question for uid: one BITFIELD (no script) reading the complete flag
// (the header's byte 8) and the uid's K bits; answer reads its reply.
func (f *KnownUsers) checkCmd(ctx context.Context, uid string) *redis.IntSliceCmd {
	args := make([]any, 0, 2+4+4*f.K)
	args = append(args, "bitfield", f.Key(f.Keys.Shard(uid)), "get", "u8", 64)
	var offs [16]any
	for _, o := range f.appendOffsets(offs[:0], uid) {
		args = append(args, "get", "u1", o)
	}
	return redis.NewIntSliceCmd(ctx, args...)
}

// answer is what a checkCmd's reply says: untrusted unless the flag is set; new when any of
// the uid's bits is clear; else maybe.
func answer(reply []int64) KnownAnswer {
	if len(reply) == 0 || reply[0] != 1 {
		return KnownUntrusted
	}
	for _, bit := range reply[1:] {
		if bit == 0 {
			return KnownNew
		}
	}
	return KnownMaybe
}

// StateMetrics count what a state miss cost: popup_user_state_misses_total{answer}, where
// answer is new (the filter: no SQL), maybe (the filter: MySQL load) or untrusted (no complete
// filter: MySQL load). A nil *StateMetrics counts nothing.
type StateMetrics struct {
	misses [3]prometheus.Counter
}

// NewStateMetrics registers the series on reg (nil: unregistered).
func NewStateMetrics(reg prometheus.Registerer) *StateMetrics {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "popup_user_state_misses_total",
		Help: "User-state reads Redis could not answer, by what the known-users filter said: new (no SQL), maybe or untrusted (a MySQL load).",
	}, []string{"answer"})
	m := &StateMetrics{}
	for a, name := range [3]string{KnownUntrusted: "untrusted", KnownNew: "new", KnownMaybe: "maybe"} {
		m.misses[a] = v.WithLabelValues(name)
	}
	if reg != nil {
		reg.MustRegister(v)
	}
	return m
}

func (m *StateMetrics) miss(a KnownAnswer) {
	if m != nil {
		m.misses[a].Inc()
	}
}
