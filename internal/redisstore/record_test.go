package redisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// TestRecordQueuesSeveralEventsInOneStep: a control exposure and the impression it fell through
// to are queued with the state write, in order, or, when the state changed meanwhile, neither is.
func TestRecordQueuesSeveralEventsInOneStep(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}
	s := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	evs := []event.Event{
		{ID: "d1~7.2-x", UID: "u1", PopupID: 7, Action: event.Exposure, At: at, DecisionID: "d1~7.2", Impressions: 1,
			Arms: []event.ArmRef{{PopupID: 7, Salt: "3f9a0c2b7d1e4a65", Arm: "control"}}},
		{ID: "d1~7.2", UID: "u1", PopupID: 8, Action: event.Impression, At: at, DecisionID: "d1~7.2", Impressions: 1, DayCount: 1},
	}
	next := &popup.UserState{Day: popup.DayNumber(at), DayCount: 1, Popups: popup.StatesOf(map[int64]popup.PopupState{
		7: {Impressions: 1, LastImpressionAt: at}, 8: {Impressions: 1, LastImpressionAt: at}})}

	out, err := s.Record(ctx, "u1", "", next, evs, false)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)

	queued, err := rdb.LRange(ctx, keys.Queue(keys.Shard("u1")), 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, queued, 2)
	for i, raw := range queued {
		got, err := event.Decode([]byte(raw))
		require.NoError(t, err)
		assert.Equal(t, evs[i].ID, got.ID)
		assert.Equal(t, evs[i].Action, got.Action)
		assert.Equal(t, evs[i].Arms, got.Arms)
	}
	st, err := s.Get(ctx, "u1", at)
	require.NoError(t, err)
	assert.Equal(t, 1, st.UserState.Popups.Get(7).Impressions)
	assert.Equal(t, 1, st.UserState.Popups.Get(8).Impressions)

	// A second pair decided on the state before the first: a conflict, nothing queued.
	out, err = s.Record(ctx, "u1", "", next, evs, false)
	require.NoError(t, err)
	assert.Equal(t, popup.Conflict, out)
	n, err := rdb.LLen(ctx, keys.Queue(keys.Shard("u1"))).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "a refused record queues none of its events")
}

func TestRecordRefusesNoEventsAndTooMany(t *testing.T) {
	t.Parallel()
	s := redisstore.NewUserStore(testenv.Redis(t), redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}, time.Hour, nil, 1, nil)
	_, err := s.Record(context.Background(), "u1", "", &popup.UserState{}, nil, false)
	assert.Error(t, err)
	_, err = s.Record(context.Background(), "u1", "", &popup.UserState{}, make([]event.Event, event.MaxRecordEvents+1), false)
	assert.Error(t, err)
}

// TestRecentIsTheValueLastRecorded: the store remembers the value its last record wrote, which a
// record accepts as prev, until a write of another kind replaces the stored value; then the
// record on it is a conflict and the store forgets it.
func TestRecentIsTheValueLastRecorded(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 4}
	s := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	s.RememberRecorded(100)
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	impression := func(n int) []event.Event {
		return []event.Event{{ID: "d" + strconv.Itoa(n), UID: "u1", PopupID: 7, Action: event.Impression, At: at, Impressions: n}}
	}
	_, ok := s.Recent("u1")
	assert.False(t, ok, "nothing recorded yet")

	next := &popup.UserState{Day: popup.DayNumber(at), DayCount: 1, Popups: popup.StatesOf(map[int64]popup.PopupState{7: {Impressions: 1, LastImpressionAt: at}})}
	out, err := s.Record(ctx, "u1", "", next, impression(1), false)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)
	recent, ok := s.Recent("u1")
	require.True(t, ok)
	stored, err := rdb.Get(ctx, keys.User("u1")).Result()
	require.NoError(t, err)
	assert.Equal(t, stored, recent.Raw, "the stored value")
	assert.Equal(t, 1, recent.UserState.Popups.Get(7).Impressions)

	recent.UserState.Popups.Set(7, popup.PopupState{Impressions: 2, LastImpressionAt: at})
	out, err = s.Record(ctx, "u1", recent.Raw, &recent.UserState, impression(2), false)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out, "a record on the remembered value")

	// Another instance records: the remembered value is stale.
	other := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	cur, err := other.Get(ctx, "u1", at)
	require.NoError(t, err)
	cur.UserState.Popups.Set(7, popup.PopupState{Impressions: 3, LastImpressionAt: at})
	out, err = other.Record(ctx, "u1", cur.Raw, &cur.UserState, impression(3), false)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)

	stale, ok := s.Recent("u1")
	require.True(t, ok)
	assert.Equal(t, 2, stale.UserState.Popups.Get(7).Impressions)
	stale.UserState.Popups.Set(7, popup.PopupState{Impressions: 3, LastImpressionAt: at})
	out, err = s.Record(ctx, "u1", stale.Raw, &stale.UserState, impression(3), false)
	require.NoError(t, err)
	assert.Equal(t, popup.Conflict, out, "the script refuses the stale value")
	_, ok = s.Recent("u1")
	assert.False(t, ok, "a conflict forgets it")
	n, err := rdb.LLen(ctx, keys.Queue(keys.Shard("u1"))).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "three impressions queued, none for the stale record")
}

func TestRecentIsBoundedAndOffByDefault(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}
	off := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	bounded := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	bounded.RememberRecorded(16)
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	remembered := 0
	for i := range 200 {
		uid := "u" + strconv.Itoa(i)
		next := &popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{7: {Impressions: 1, LastImpressionAt: at}})}
		evs := []event.Event{{ID: "d", UID: uid, PopupID: 7, Action: event.Impression, At: at, Impressions: 1}}
		out, err := bounded.Record(ctx, uid, "", next, evs, false)
		require.NoError(t, err)
		require.Equal(t, popup.Recorded, out)
		_, ok := off.Recent(uid)
		assert.False(t, ok, "without RememberRecorded nothing is remembered")
	}
	for i := range 200 {
		if _, ok := bounded.Recent("u" + strconv.Itoa(i)); ok {
			remembered++
		}
	}
	assert.LessOrEqual(t, remembered, 16)
	assert.Positive(t, remembered)
}
