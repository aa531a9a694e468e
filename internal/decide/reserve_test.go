package decide_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/config"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/testenv"
)

// TestConfirmedModeDegradesWhileRedisIsFrozen: with the service's Redis client and pipeline
// against a redis-server of the test's own, a confirm-mode decision while Redis is frozen answers
// degraded within its budget and reserves nothing; a confirmation while it is frozen is
// unavailable (a 503 the client retries) and, retried once Redis is back, counts once.
func TestConfirmedModeDegradesWhileRedisIsFrozen(t *testing.T) {
	t.Parallel()
	redis := testenv.StartRedisServer(t)
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": redis.Addr, "POPUP_REDIS_TIMEOUT": "1s"})
	require.NoError(t, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(t, err)
	defer rdb.Close()
	pipe, err := redisstore.NewPipeline(rdb)
	require.NoError(t, err)
	defer pipe.Close()
	keys := redisstore.Keys{Prefix: "frozen", Shards: 1}
	store := redisstore.NewUserStore(rdb, keys, time.Hour, newUsers{}, 1, pipe)
	holder := &snapshot.Holder{}
	s := snapshot.BuildWith(1, []popup.Popup{active(1, nil)}, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)
	require.True(t, holder.Store(s))
	// A breaker that never opens: every call below goes to Redis.
	d := &decide.Decider{Snapshots: holder, Users: store, Reservations: store, Breakers: breaker.NewSet(1, 1000, time.Second, nil),
		Budget: 2 * time.Second}
	ctx := context.Background()
	queued := func() int64 {
		t.Helper()
		n, err := rdb.LLen(ctx, keys.Queue(0)).Result()
		require.NoError(t, err)
		return n
	}

	shown := d.Reserve(ctx, iosReq, t0)
	require.Equal(t, decide.Shown, shown.Kind)

	redis.Signal(t, syscall.SIGSTOP)
	other := iosReq
	other.UID = "u2"
	assert.Equal(t, decide.Degraded, d.Reserve(ctx, other, t0).Kind, "a decision while Redis is frozen")
	assert.ErrorIs(t, d.Confirm(ctx, iosReq.UID, 1, shown.DecisionID, t0), decide.ErrUnavailable,
		"a confirmation while Redis is frozen")
	redis.Signal(t, syscall.SIGCONT)

	// The frozen confirmation may have been applied when Redis woke: either way the retry is
	// accepted and the impression counted once.
	require.NoError(t, d.Confirm(ctx, iosReq.UID, 1, shown.DecisionID, t0), "the client's retry")
	require.NoError(t, d.Confirm(ctx, iosReq.UID, 1, shown.DecisionID, t0), "and another")
	assert.EqualValues(t, 1, queued(), "one impression queued")
	st, err := store.Get(ctx, iosReq.UID, t0)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Popups.Get(1).Impressions)
	assert.Zero(t, rdb.Exists(ctx, keys.Reservation(other.UID)).Val(), "the degraded decision reserved nothing")
}

// newUsers is a durable store that has never seen anybody.
type newUsers struct{}

func (newUsers) Load(context.Context, string, time.Time) (popup.UserState, error) {
	return popup.UserState{}, nil
}
