package redisstore

import (
	"hash/maphash"
	"sync"

	"popupsvc/internal/popup"
)

// recentStates remembers, per process, the stored value this process last recorded for a user:
// the value the record script compares with. A decision that starts from it skips the state's
// GET; the record script still compares it with what Redis holds, so a value another instance
// (or an erasure, or an eviction) replaced meanwhile only costs a conflict and a fresh read.
//
// Memory is bounded: at most the configured number of entries, in shards with their own lock; a
// full shard drops an entry at random to make room.
type recentStates struct {
	seed     maphash.Seed
	shards   [recentShards]recentShard
	perShard int
}

type recentShard struct {
	mu sync.Mutex
	m  map[string]string // uid → stored value
	_  [64]byte          // keeps neighbouring shards' locks off one cache line
}

const recentShards = 16

func newRecentStates(size int) *recentStates {
	r := &recentStates{seed: maphash.MakeSeed(), perShard: max(size/recentShards, 1)}
	for i := range r.shards {
		r.shards[i].m = make(map[string]string)
	}
	return r
}

func (r *recentStates) shard(uid string) *recentShard {
	return &r.shards[maphash.String(r.seed, uid)%recentShards]
}

func (r *recentStates) get(uid string) (string, bool) {
	s := r.shard(uid)
	s.mu.Lock()
	raw, ok := s.m[uid]
	s.mu.Unlock()
	return raw, ok
}

func (r *recentStates) put(uid, raw string) {
	s := r.shard(uid)
	s.mu.Lock()
	if _, ok := s.m[uid]; !ok && len(s.m) >= r.perShard {
		for k := range s.m { // map order: a random victim
			delete(s.m, k)
			break
		}
	}
	s.m[uid] = raw
	s.mu.Unlock()
}

func (r *recentStates) forget(uid string) {
	s := r.shard(uid)
	s.mu.Lock()
	delete(s.m, uid)
	s.mu.Unlock()
}

// RememberRecorded makes the store keep, for up to size users (0 = off), the state value this
// process last recorded, which Recent returns.
func (s *UserStore) RememberRecorded(size int) {
	if size > 0 {
		s.recent = newRecentStates(size)
	}
}

// Recent returns the state this process last recorded for uid, when it remembers one (see
// RememberRecorded): possibly no longer what Redis holds. Record with its Raw as prev is
// refused as a Conflict if it is not. The state is the caller's own copy.
func (s *UserStore) Recent(uid string) (popup.StoredState, bool) {
	if s.recent == nil {
		return popup.StoredState{}, false
	}
	raw, ok := s.recent.get(uid)
	if !ok {
		return popup.StoredState{}, false
	}
	st, err := DecodeState(raw)
	if err != nil {
		s.recent.forget(uid)
		return popup.StoredState{}, false
	}
	return popup.StoredState{UserState: st, Raw: raw}, true
}

// noteRecorded keeps what Record's outcome says about uid's stored value: the value it wrote,
// or nothing when the value it was given is no longer the stored one.
func (s *UserStore) noteRecorded(uid string, out Outcome, written []byte) {
	if s.recent == nil {
		return
	}
	switch out {
	case popup.Recorded:
		s.recent.put(uid, string(written))
	case popup.Conflict:
		s.recent.forget(uid)
	}
}
