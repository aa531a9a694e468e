package redisstore

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

func TestKnownUsersSizing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		expected, shards int
		fp               float64
		wantBits         uint64 // per shard
		wantK            int
	}{
		// m = -n ln p / ln² 2: 9.585 bits per uid at 1%, 14.38 at 0.1%; k = m/n ln 2
		{name: "1M at 1%", expected: 1_000_000, shards: 1, fp: 0.01, wantBits: 9_585_059, wantK: 7},
		{name: "1M at 1% over 4 shards", expected: 1_000_000, shards: 4, fp: 0.01, wantBits: 2_396_265, wantK: 7},
		{name: "10M at 0.1%", expected: 10_000_000, shards: 1, fp: 0.001, wantBits: 143_775_876, wantK: 10},
		{name: "tiny", expected: 1, shards: 1, fp: 0.4, wantBits: 64, wantK: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewKnownUsers(Keys{Prefix: "p", Shards: tt.shards}, tt.expected, tt.fp)
			require.NoError(t, err)
			assert.Equal(t, tt.wantBits, f.Bits)
			assert.Equal(t, tt.wantK, f.K)
		})
	}
	f, err := NewKnownUsers(Keys{Prefix: "p", Shards: 1}, 1_000_000, 0.01)
	require.NoError(t, err)
	assert.InDelta(t, 1.2e6, float64(f.Bytes()), 0.01e6, "about 1.2 MB per million uids at 1%")
	for _, bad := range []struct {
		n  int
		fp float64
	}{{0, 0.01}, {-1, 0.01}, {10, 0}, {10, 1}} {
		_, err := NewKnownUsers(Keys{Prefix: "p", Shards: 1}, bad.n, bad.fp)
		assert.Error(t, err, "expected %d, fp %g", bad.n, bad.fp)
	}
}

// TestKnownUsersFalsePositiveRate fills an in-memory copy of the filter with its expected number
// of uids and measures the false positives among others: near the configured rate, and never a
// false negative.
func TestKnownUsersFalsePositiveRate(t *testing.T) {
	t.Parallel()
	const n = 20_000
	f, err := NewKnownUsers(Keys{Prefix: "p", Shards: 1}, n, 0.01)
	require.NoError(t, err)
	bits := make([]bool, knownHeaderBits+f.Bits)
	buf := make([]any, 0, f.K)
	set := func(uid string, mark bool) (all bool) {
		all = true
		buf = f.appendOffsets(buf[:0], uid)
		for _, o := range buf {
			off := o.(uint64)
			if off < knownHeaderBits || off >= knownHeaderBits+f.Bits {
				t.Fatalf("offset %d of %q outside the filter's bits", off, uid)
			}
			if mark {
				bits[off] = true
			}
			all = all && bits[off]
		}
		return all
	}
	for i := range n {
		set("user-"+strconv.Itoa(i), true)
	}
	for i := range n {
		if !set("user-"+strconv.Itoa(i), false) {
			t.Fatalf("false negative: user-%d", i)
		}
	}
	fp := 0
	const probes = 100_000
	for i := range probes {
		if set("other-"+strconv.Itoa(i), false) {
			fp++
		}
	}
	rate := float64(fp) / probes
	t.Logf("false positives: %d of %d (%.3f%%)", fp, probes, 100*rate)
	assert.InDelta(t, 0.01, rate, 0.005)
}

// TestKnownUsersLifecycle runs the filter against the real Redis (and, in the cluster pass, a
// Redis Cluster): untrusted until a rebuild finishes; then "new" for an unseen uid, with the
// empty state without the loader, and "maybe" for an added one; a filter lost during a rebuild is never
// declared complete; one rebuild at a time.
func TestKnownUsersLifecycle(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 2}
	f, err := NewKnownUsers(keys, 1000, 0.01)
	require.NoError(t, err)
	ctx := context.Background()
	s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	s.UseKnownUsers(f, nil)
	check := func(uid string) KnownAnswer {
		t.Helper()
		a, err := s.knownCheck(ctx, uid)
		require.NoError(t, err)
		return a
	}
	uid := "alice"
	shard := keys.Shard(uid)

	assert.Equal(t, KnownUntrusted, check(uid), "no filter yet")
	require.NoError(t, f.Add(ctx, rdb, shard, []string{"bob"}))
	assert.Equal(t, KnownUntrusted, check(uid), "bits alone are not a complete filter")

	r, err := f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	require.NotNil(t, r)
	other, err := f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	assert.Nil(t, other, "the lease keeps a second worker out")
	ok, err := r.Add(ctx, []string{"carol"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, KnownUntrusted, check(uid), "not complete before Finish")
	ok, err = r.Finish(ctx)
	require.NoError(t, err)
	require.True(t, ok)

	done, err := f.Complete(ctx, rdb, shard)
	require.NoError(t, err)
	assert.True(t, done)
	for _, known := range []string{"bob", "carol"} {
		if keys.Shard(known) == shard {
			assert.Equal(t, KnownMaybe, check(known), known)
		}
	}
	assert.Equal(t, KnownNew, check(uid))
	st, err := s.Get(ctx, uid, time.Now())
	require.NoError(t, err, "a new user's state needs no loader")
	assert.Empty(t, st.Popups)
	again, err := f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	assert.Nil(t, again, "a complete filter needs no rebuild")

	// Lost during a rebuild: the rebuild notices at its next step, cannot finish, and lets go
	// of its lease, so the next check begins again at once (not when the lease runs out).
	require.NoError(t, rdb.Del(ctx, f.Key(shard)).Err())
	r, err = f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	require.NotNil(t, r, "a lost filter is rebuilt")
	require.NoError(t, rdb.Del(ctx, f.Key(shard)).Err())
	ok, err = r.Add(ctx, []string{"dave"})
	require.NoError(t, err)
	assert.False(t, ok)
	next, err := f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	require.NotNil(t, next, "a step that finds the filter lost lets go of the lease")
	ok, err = r.Finish(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, KnownUntrusted, check("erin"))
	other, err = f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	assert.Nil(t, other, "the old rebuild's Finish leaves the new one's lease alone")

	// Lost just before Finish: Finish lets go of the lease.
	require.NoError(t, rdb.Del(ctx, f.Key(shard)).Err())
	ok, err = next.Finish(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	r, err = f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	assert.NotNil(t, r, "a Finish that finds the filter lost lets go of the lease")

	// A rebuild given up after a failed step lets go of its lease, and of no other's.
	require.NoError(t, r.Abandon(ctx))
	next, err = f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	require.NotNil(t, next, "an abandoned rebuild holds no lease")
	require.NoError(t, r.Abandon(ctx))
	other, err = f.BeginRebuild(ctx, rdb, shard, 60_000)
	require.NoError(t, err)
	assert.Nil(t, other, "abandoning an old rebuild leaves the new one's lease alone")
}

// slowLoader stands in for MySQL in the tests of the shared load: it answers after delay.
type slowLoader struct {
	delay   time.Duration
	calls   atomic.Int64
	started chan struct{} // told of each call
}

func (l *slowLoader) Load(ctx context.Context, uid string, now time.Time) (popup.UserState, error) {
	l.calls.Add(1)
	select {
	case l.started <- struct{}{}:
	default:
	}
	select {
	case <-time.After(l.delay):
	case <-ctx.Done():
		return popup.UserState{}, ctx.Err()
	}
	return popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{7: {Impressions: 2}})}, nil
}

// TestSharedStateLoadOutlivesItsCallers: a MySQL load that misses a request's budget fails that
// request (degraded) but finishes and caches the state, so the same user's next request is a
// Redis hit; a caller that hangs up does not fail the others waiting on the same load.
func TestSharedStateLoadOutlivesItsCallers(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}
	loader := &slowLoader{delay: 300 * time.Millisecond, started: make(chan struct{}, 1)}
	s := NewUserStore(rdb, keys, time.Hour, loader, 4, nil)
	now := time.Now()

	// The request's budget ends while the load runs (the GET before it has answered "no state").
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-loader.started; cancel() }()
	_, err := s.Get(ctx, "late", now)
	require.ErrorIs(t, err, ErrLoad, "past the budget: an error the caller answers degraded")
	require.Eventually(t, func() bool { return rdb.Exists(context.Background(), keys.User("late")).Val() == 1 },
		5*time.Second, 10*time.Millisecond, "the load finishes on its own and caches the state")
	st, err := s.Get(context.Background(), "late", now)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Popups.Get(7).Impressions)
	assert.EqualValues(t, 1, loader.calls.Load(), "the next request was a Redis hit")

	// Two requests of one uid share a load; the first hangs up.
	gone, hangUp := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := s.Get(gone, "shared", now)
		first <- err
	}()
	<-loader.started
	second := make(chan error, 1)
	go func() {
		_, err := s.Get(context.Background(), "shared", now)
		second <- err
	}()
	hangUp()
	assert.ErrorIs(t, <-first, context.Canceled)
	assert.NoError(t, <-second, "the other request still gets the state")
	assert.EqualValues(t, 2, loader.calls.Load(), "one load for both")
}
