package decide

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// LocalAnswers remembers, per process, that nothing can show to a user until some instant: the
// answer popup.NextEligibleAt gave after a full decision that chose nothing. Until then, or until
// the config changes or the user's membership in an audience the placement's popups target
// does, the same request (uid, platform, app version, region, language, placement, and
// the values of the attributes the placement's rules read) is answered without reading the
// user's state from Redis. A request carrying an event is always decided in full: it is a
// moment, not a state to remember.
//
// It is safe without any coordination between instances because every display rule only
// extends hiding: an impression another instance records, a click, a close, can only push that
// instant later, never earlier. Only the snapshot can make something eligible sooner, and it
// does so through its config or an audience check's answer alone: every entry carries the
// config it was decided under (snapshot.Snapshot.Config) and the request's
// snapshot.Memberships then (whether each audience the placement's popups target was held, and
// whether the uid was a member). A new config ends every entry. New audience sets (a new
// snapshot.Snapshot.Gen of the same Config, under the same config version or a version that
// only announces an audience's new members) end only the entries whose memberships they change:
// for the others every audience check of every candidate answers as before, so the decision
// would too. An entry whose placement targets more audiences than
// snapshot.MaxMembershipAudiences ends with any new Gen.
//
// Memory is bounded: at most the configured number of entries, in shards with their own lock;
// a full shard evicts an entry at random to make room.
type LocalAnswers struct {
	seed     maphash.Seed
	shards   []localShard
	mask     uint64
	perShard int
}

type localShard struct {
	mu   sync.RWMutex
	m    map[string]localEntry
	hits atomic.Uint64
	miss atomic.Uint64
	evic atomic.Uint64
	kept atomic.Uint64
	// purged is the newest config (snapshot.Snapshot.Config) for which the shard dropped the
	// older ones' entries (evict), under mu.
	purged uint64
	_      [64]byte // keeps neighbouring shards' locks off one cache line
}

// localEntry: nothing shows for the key before untilSec (unix seconds, rounded down so that
// the entry ends no later than the computed instant) under snapshot generation gen, and under
// any snapshot of config with the same members.
type localEntry struct {
	gen      uint64
	config   uint64
	untilSec int64
	// members are the request's snapshot.Memberships under gen with membersKnown set; 0 when the
	// placement targets too many audiences for them.
	members uint64
}

// membersKnown marks a localEntry's members as described (snapshot.Memberships uses the 62 low
// bits).
const membersKnown = 1 << 63

// membersOf is what a localEntry keeps of r's memberships under snap.
func membersOf(snap *snapshot.Snapshot, r *popup.Request) uint64 {
	m, ok := snap.Memberships(r.Placement, r.UID)
	if !ok {
		return 0
	}
	return m | membersKnown
}

const maxLocalShards = 64

// NewLocalAnswers keeps at most size entries; size <= 0 returns nil (local answers off), which
// Decider accepts.
func NewLocalAnswers(size int) *LocalAnswers {
	if size <= 0 {
		return nil
	}
	n := maxLocalShards
	for n > 1 && size/n < 64 {
		n /= 2
	}
	l := &LocalAnswers{seed: maphash.MakeSeed(), shards: make([]localShard, n), mask: uint64(n - 1), perShard: size / n}
	for i := range l.shards {
		l.shards[i].m = make(map[string]localEntry)
	}
	return l
}

// localKey is a request's targeting attributes laid out as one map key: uid, platform, region
// and language each end in a NUL (none may contain one), then the app version's 16 bytes, then
// for each attribute key the placement's rules read (in the snapshot's order, fixed for its
// generation) 0x02 when the request lacks it, else 0x01, its value and a NUL, then for a
// placement other than the homepage 0xFF and its name. No value holds a NUL or a 0xFF (valid
// UTF-8 has none): each key is one request. The homepage's plain request without rules has the
// key it had before placements existed, at the same cost.
type localKey struct {
	buf [192]byte // room for the fields of a usual request and a few short attribute values
	n   int
}

// build lays out r, whose placement's rules read the attributes ruleKeys. A request carrying an
// event, or too long for the key (a long lang list, long attribute values), gets none (n == 0)
// and is decided without the local answers.
func (k *localKey) build(r *popup.Request, ruleKeys []string) {
	k.n = 0
	if r.Event != "" || len(r.UID)+len(r.Platform)+len(r.Region)+len(r.Lang)+4+16 > len(k.buf) {
		return
	}
	b := k.buf[:0]
	for _, s := range [...]string{r.UID, r.Platform, r.Region, r.Lang} {
		b = append(b, s...)
		b = append(b, 0)
	}
	for _, part := range r.AppVersion {
		b = binary.BigEndian.AppendUint32(b, part)
	}
	// ruleKeys and the attributes are both sorted by key: one walk through the two finds each
	// key's value, without a lookup per key.
	pairs, j := r.Attrs.Pairs(), 0
	for _, key := range ruleKeys {
		for j < len(pairs) && pairs[j].Key < key {
			j++
		}
		if j == len(pairs) || pairs[j].Key != key {
			if len(b) == len(k.buf) {
				return
			}
			b = append(b, 2)
			continue
		}
		v := pairs[j].Value
		if len(b)+len(v)+2 > len(k.buf) {
			return
		}
		for i := 0; i < len(v); i++ {
			if v[i] == 0 || v[i] == 0xff {
				return
			}
		}
		b = append(b, 1)
		b = append(b, v...)
		b = append(b, 0)
	}
	if p := r.Placement; p != "" && p != popup.DefaultPlacement {
		if len(b)+1+len(p) > len(k.buf) {
			return
		}
		b = append(b, 0xff)
		b = append(b, p...)
	}
	k.n = len(b)
}

func (k *localKey) bytes() []byte { return k.buf[:k.n] }

func (l *LocalAnswers) shard(k *localKey) *localShard {
	return &l.shards[maphash.Bytes(l.seed, k.bytes())&l.mask]
}

// lookup reports whether nothing can show for k, the key of r, under snap at now.
func (l *LocalAnswers) lookup(k *localKey, snap *snapshot.Snapshot, r *popup.Request, now time.Time) bool {
	if k.n == 0 {
		return false
	}
	sh := l.shard(k)
	sh.mu.RLock()
	e, ok := sh.m[string(k.bytes())]
	sh.mu.RUnlock()
	if ok && now.Unix() < e.untilSec && (e.gen == snap.Gen || sh.carry(k, e, snap, r)) {
		sh.hits.Add(1)
		return true
	}
	sh.miss.Add(1)
	return false
}

// carry reports whether e, k's entry of another generation than snap's, holds under snap too:
// the same config, and the same memberships (see LocalAnswers). An entry of an older
// generation that holds is moved to snap's, so that the next lookup is the plain one.
func (sh *localShard) carry(k *localKey, e localEntry, snap *snapshot.Snapshot, r *popup.Request) bool {
	if e.config != snap.Config || e.members&membersKnown == 0 || membersOf(snap, r) != e.members {
		return false
	}
	if e.gen < snap.Gen {
		sh.mu.Lock()
		if cur, ok := sh.m[string(k.bytes())]; ok && cur == e { // not replaced meanwhile
			cur.gen = snap.Gen
			sh.m[string(k.bytes())] = cur
			sh.kept.Add(1)
		}
		sh.mu.Unlock()
	}
	return true
}

// remember records that nothing can show for k, the key of r, under snap before until (zero:
// ever). An until not after now is not worth an entry.
func (l *LocalAnswers) remember(k *localKey, snap *snapshot.Snapshot, r *popup.Request, now, until time.Time) {
	if k.n == 0 {
		return
	}
	untilSec := int64(math.MaxInt64)
	if !until.IsZero() {
		untilSec = until.Unix()
		if untilSec <= now.Unix() {
			return
		}
	}
	e := localEntry{gen: snap.Gen, config: snap.Config, untilSec: untilSec, members: membersOf(snap, r)}
	sh := l.shard(k)
	sh.mu.Lock()
	if _, ok := sh.m[string(k.bytes())]; !ok && len(sh.m) >= l.perShard {
		sh.evic.Add(uint64(sh.evict(snap.Config, now.Unix(), l.perShard)))
	}
	sh.m[string(k.bytes())] = e
	sh.mu.Unlock()
}

// evictLooks is how many entries a full shard looks at for an expired one to drop.
const evictLooks = 8

// evict makes room in a full shard (its lock held) for an answer of config. The first time the
// shard makes room for a config newer than any before, it drops every entry of an older one:
// none can answer again (configs only grow), and left in place they would push the new
// config's answers out at random (about a third of a full cache's, after a config change).
// One pass a shard per config change; otherwise an expired entry among the first evictLooks in
// map order, else the first of them (map order is random, so the victim is too). It returns how
// many entries it dropped.
func (sh *localShard) evict(config uint64, nowSec int64, size int) int {
	if config > sh.purged {
		sh.purged = config
		before := len(sh.m)
		for key, e := range sh.m {
			if e.config < config {
				delete(sh.m, key)
			}
		}
		if len(sh.m) < size {
			return before - len(sh.m)
		}
	}
	var first string
	looked := 0
	for key, e := range sh.m {
		if e.untilSec <= nowSec {
			delete(sh.m, key)
			return 1
		}
		if looked == 0 {
			first = key
		}
		if looked++; looked == evictLooks {
			break
		}
	}
	delete(sh.m, first)
	return 1
}

// Len is the number of entries held.
func (l *LocalAnswers) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

func (l *LocalAnswers) sum(f func(*localShard) *atomic.Uint64) float64 {
	var n uint64
	for i := range l.shards {
		n += f(&l.shards[i]).Load()
	}
	return float64(n)
}

// Collectors are the local answers' Prometheus series: hits, misses, evictions and entries
// (none when l is nil, i.e. off).
func (l *LocalAnswers) Collectors() []prometheus.Collector {
	if l == nil {
		return nil
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "popup_local_answers_hits_total",
			Help: "Homepage requests answered \"nothing to show\" from the local answers, without Redis."},
			func() float64 { return l.sum(func(s *localShard) *atomic.Uint64 { return &s.hits }) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "popup_local_answers_misses_total",
			Help: "Homepage requests the local answers could not answer (no entry, expired, or an older config)."},
			func() float64 { return l.sum(func(s *localShard) *atomic.Uint64 { return &s.miss }) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "popup_local_answers_kept_total",
			Help: "Local answers carried over to new audience sets that left the user's memberships as they were."},
			func() float64 { return l.sum(func(s *localShard) *atomic.Uint64 { return &s.kept }) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "popup_local_answers_evictions_total",
			Help: "Local answers dropped to stay within POPUP_LOCAL_ANSWER_CACHE_SIZE."},
			func() float64 { return l.sum(func(s *localShard) *atomic.Uint64 { return &s.evic }) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "popup_local_answers_entries",
			Help: "Local answers held."}, func() float64 { return float64(l.Len()) }),
	}
}

// nothingUntil is the instant until which a decision for req that recorded nothing stays one
// that records nothing: popup.NextEligibleAt for a user the holdout does not hold out (heldOut
// false; the
// holdout changes nothing for them while nothing shows). A user held out (docs/CONTRACT.md §15)
// can be shown a holdout-exempt popup from its NextEligibleAt under the holdout on, and is due a
// holdout event once a popup could be chosen without the holdout, not before the next UTC day
// when the user carries today's mark: the earlier of the two. Both only move later as the user's
// state changes (a holdout event sets the mark, never clears it), so the invariant above holds.
func nothingUntil(snap *snapshot.Snapshot, cands []*popup.Compiled, req popup.Request, s *popup.UserState, now time.Time, heldOut bool) time.Time {
	pace := snap.Pacing
	due := popup.NextEligibleAt(cands, req, s, now, pace)
	if !heldOut {
		return due
	}
	if next := time.Unix((int64(popup.DayNumber(now))+1)*86400, 0).UTC(); !due.IsZero() && s.MarkedOn(snap.Holdout.Phase, now) && due.Before(next) {
		due = next
	}
	pace.HeldOut = true
	shown := popup.NextEligibleAt(cands, req, s, now, pace)
	if due.IsZero() || !shown.IsZero() && shown.Before(due) {
		return shown
	}
	return due
}
