package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBreaker(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name  string
		steps func(b *Breaker)
		at    time.Time
		want  bool
	}{
		{"closed allows", func(*Breaker) {}, t0, true},
		{"below threshold allows", func(b *Breaker) { b.Failure(t0); b.Failure(t0) }, t0, true},
		{"threshold opens", func(b *Breaker) { b.Failure(t0); b.Failure(t0); b.Failure(t0) }, t0.Add(time.Millisecond), false},
		{"success resets the count", func(b *Breaker) { b.Failure(t0); b.Failure(t0); b.Success(); b.Failure(t0) }, t0, true},
		{"probe after cooldown", func(b *Breaker) { b.Failure(t0); b.Failure(t0); b.Failure(t0) }, t0.Add(time.Second), true},
		{"only one probe", func(b *Breaker) {
			b.Failure(t0)
			b.Failure(t0)
			b.Failure(t0)
			b.Allow(t0.Add(time.Second))
		}, t0.Add(time.Second), false},
		{"probe success closes", func(b *Breaker) {
			b.Failure(t0)
			b.Failure(t0)
			b.Failure(t0)
			b.Allow(t0.Add(time.Second))
			b.Success()
		}, t0.Add(time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(3, time.Second)
			tt.steps(b)
			assert.Equal(t, tt.want, b.Allow(tt.at))
		})
	}
}

func TestSetOpensOnlyTheFailingPartitionsBreaker(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	s := NewSet(2, 1, time.Minute, func(key string) int { return len(key) % 2 })
	s.For("a").Failure(now)
	if s.For("c").Allow(now) {
		t.Error("the failing partition's breaker stayed closed")
	}
	if !s.For("ab").Allow(now) {
		t.Error("another partition's breaker opened")
	}
	one := NewSet(1, 1, time.Minute, nil)
	if one.For("x") != one.For("yz") {
		t.Error("without shardOf every key must share one breaker")
	}
}
