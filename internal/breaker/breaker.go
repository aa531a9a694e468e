// Package breaker is a small lock-free circuit breaker: after Threshold consecutive failures it
// opens for Cooldown, then lets one probe through; the probe's success closes it again.
package breaker

import (
	"sync/atomic"
	"time"
)

// Breaker guards a dependency. The zero value is not usable; use New.
type Breaker struct {
	threshold int32
	cooldown  time.Duration
	failures  atomic.Int32
	openUntil atomic.Int64 // unix nanos; 0 = closed
}

// New returns a closed breaker.
func New(threshold int, cooldown time.Duration) *Breaker {
	return &Breaker{threshold: int32(threshold), cooldown: cooldown}
}

// Allow reports whether a call may go to the dependency at now. While open it says no; once the
// cooldown has passed exactly one caller gets a yes (the probe) and the cooldown restarts.
func (b *Breaker) Allow(now time.Time) bool {
	until := b.openUntil.Load()
	if until == 0 {
		return true
	}
	n := now.UnixNano()
	if n < until {
		return false
	}
	return b.openUntil.CompareAndSwap(until, n+int64(b.cooldown))
}

// Success records a call that worked: the breaker closes.
func (b *Breaker) Success() {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	if b.openUntil.Load() != 0 {
		b.openUntil.Store(0)
	}
}

// Failure records a failed call at now; the threshold-th consecutive one opens the breaker.
func (b *Breaker) Failure(now time.Time) {
	if b.failures.Add(1) >= b.threshold {
		b.openUntil.Store(now.UnixNano() + int64(b.cooldown))
	}
}

// Set is one breaker per partition of a dependency: per queue shard, whose hash slot holds its
// users' state, so that a failing Redis Cluster master opens the breakers of its own shards and
// the users of the others are served meanwhile.
type Set struct {
	bs      []*Breaker
	shardOf func(key string) int
}

// NewSet returns n closed breakers (at least one) of the given threshold and cooldown; shardOf
// names a key's partition, in [0, n) (nil: one partition).
func NewSet(n, threshold int, cooldown time.Duration, shardOf func(key string) int) *Set {
	s := &Set{bs: make([]*Breaker, max(n, 1)), shardOf: shardOf}
	for i := range s.bs {
		s.bs[i] = New(threshold, cooldown)
	}
	return s
}

// For returns the breaker of key's partition.
func (s *Set) For(key string) *Breaker {
	if s.shardOf == nil {
		return s.bs[0]
	}
	return s.bs[s.shardOf(key)]
}
