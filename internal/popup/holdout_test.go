package popup_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// TestHoldoutBucketKnownAnswers pins the holdout's bucket to the formula of docs/CONTRACT.md §15,
// computed independently in Python (fmix64 of FNV-1a 64 of "<salt>:h:<uid>", mod 10000).
func TestHoldoutBucketKnownAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		salt, uid string
		want      int
	}{
		{"3f9a0c2b7d1e4a65", "user-1", 6728},
		{"h01d0u7a5a17c0de", "vip-3", 9708},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, popup.HoldoutBucket(tt.salt, tt.uid), "%s %s", tt.salt, tt.uid)
	}
	assert.NotEqual(t, popup.CoverageBucket("3f9a0c2b7d1e4a65", "user-1"), popup.HoldoutBucket("3f9a0c2b7d1e4a65", "user-1"),
		"its own tag: a holdout salt that happened to be an experiment's would not repeat its buckets")
}

// TestHoldoutCheckHoldsItsShare: a 10% holdout holds out about 10% of 100,000 users (within 4.5
// standard deviations), exactly those whose bucket is below 1,000, and is independent of an
// experiment's coverage under the same salt; not running, it holds nobody.
func TestHoldoutCheckHoldsItsShare(t *testing.T) {
	t.Parallel()
	h := popup.Holdout{Percent: 10, Salt: "3f9a0c2b7d1e4a65", Phase: 1}
	c := h.Check()
	const n = 100_000
	held, both := 0, 0
	for i := range n {
		uid := "u-" + strconv.Itoa(i)
		in := c.Holds(uid)
		require.Equal(t, popup.HoldoutBucket(h.Salt, uid) < 1000, in, uid)
		if in {
			held++
			if popup.CoverageBucket(h.Salt, uid) < 5000 {
				both++
			}
		}
	}
	assert.InDelta(t, n/10, held, 4.5*95)
	assert.InDelta(t, float64(held)/2, both, 4.5*50, "half of those held out are in a 50% coverage of the same salt")

	ended := h
	ended.EndedAt = time.Now()
	for _, hc := range []popup.HoldoutCheck{{}, ended.Check(), popup.Holdout{Salt: h.Salt}.Check()} {
		for i := range 1000 {
			require.False(t, hc.Holds("u-"+strconv.Itoa(i)))
		}
	}
}

// TestHoldoutChange: the same percentage changes nothing; another ends the running phase and
// starts the next with the same salt (a fresh one the first time); 0 ends it and starts none.
func TestHoldoutChange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 16, 0, 0, 123_456_789, time.UTC)
	at := now.Truncate(time.Millisecond)
	running := popup.Holdout{Percent: 10, Salt: "5a175a175a175a17", Phase: 2, StartedAt: now.Add(-time.Hour)}
	ended := running
	ended.EndedAt = at
	tests := []struct {
		name        string
		give        popup.Holdout
		percent     int
		wantNext    popup.Holdout
		wantEnded   popup.Holdout
		wantChanged bool
	}{
		{"never set, 0: nothing", popup.Holdout{}, 0, popup.Holdout{}, popup.Holdout{}, false},
		{"running, the same percentage: nothing", running, 10, running, popup.Holdout{}, false},
		{"running, another: the next phase, same salt", running, 15,
			popup.Holdout{Percent: 15, Salt: running.Salt, Phase: 3, StartedAt: at}, ended, true},
		{"running, 0: ended, no phase", running, 0, ended, ended, true},
		{"ended, 0: nothing", ended, 0, ended, popup.Holdout{}, false},
		{"ended, a percentage: the next phase, same salt", ended, 10,
			popup.Holdout{Percent: 10, Salt: running.Salt, Phase: 3, StartedAt: at}, popup.Holdout{}, true},
	}
	for _, tt := range tests {
		next, gotEnded, changed := tt.give.Change(tt.percent, now)
		assert.Equal(t, tt.wantNext, next, tt.name)
		assert.Equal(t, tt.wantEnded, gotEnded, tt.name)
		assert.Equal(t, tt.wantChanged, changed, tt.name)
	}

	first, _, changed := popup.Holdout{}.Change(5, now)
	require.True(t, changed)
	assert.True(t, popup.ValidBucketSeed(first.Salt), "the first phase draws a salt: %q", first.Salt)
	assert.Equal(t, 1, first.Phase)
	assert.Equal(t, first.Salt+"-p1", first.PhaseKey())
}

func TestValidateHoldoutPercent(t *testing.T) {
	t.Parallel()
	for _, give := range []int{0, 1, 10, 20} {
		assert.Empty(t, popup.ValidateHoldoutPercent(give), give)
	}
	for _, give := range []int{-1, 21, 100} {
		assert.Equal(t, "holdout_percent", popup.ValidateHoldoutPercent(give)[0].Field, give)
	}
}

// TestHeldOutSelection: for a user held out only holdout-exempt popups are eligible, the others
// say why, and the earliest eligible instant ignores them.
func TestHeldOutSelection(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	plain := compiled(t, 1, func(in *popup.Input) { p := 10; in.Priority = &p })
	exempt := compiled(t, 2, func(in *popup.Input) { in.HoldoutExempt = true })
	req := popup.Request{UID: "u", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}}
	cs := []*popup.Compiled{plain, exempt}
	held := popup.Pacing{HeldOut: true}

	assert.Same(t, plain, popup.Select(cs, req, nil, now, popup.Pacing{}))
	assert.Same(t, exempt, popup.Select(cs, req, nil, now, held))
	assert.Nil(t, popup.Select(cs[:1], req, nil, now, held))
	assert.Equal(t, popup.ReasonHoldout, plain.Eligible(nil, now, held))
	assert.Equal(t, popup.ReasonNone, exempt.Eligible(nil, now, held))
	assert.True(t, popup.NextEligibleAt(cs[:1], req, nil, now, held).IsZero(), "never, while the holdout holds the user out")
	assert.Equal(t, now, popup.NextEligibleAt(cs, req, nil, now, held))
}

// BenchmarkHoldoutCheck is the membership test a decision takes while the holdout runs.
func BenchmarkHoldoutCheck(b *testing.B) {
	c := popup.Holdout{Percent: 10, Salt: "3f9a0c2b7d1e4a65", Phase: 1}.Check()
	uid := "user-1234567890"
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if c.Holds(uid) {
			n++
		}
	}
	_ = n
}
