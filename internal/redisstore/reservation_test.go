package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

// TestReservationLifecycle runs a reservation through the scripts against the real Redis: a
// first-time user's reservation holds the user's next one back and writes nothing else; its
// confirmation writes the planned state, queues its events in order and adds the uid to the
// known-users filter, once (a retry is a duplicate); another decision or popup is refused as
// expired; a reservation planned on a state since replaced is a conflict, applied as re-planned.
func TestReservationLifecycle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}
	f, err := NewKnownUsers(keys, 1000, 0.01)
	require.NoError(t, err)
	s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	s.UseKnownUsers(f, nil)
	r, err := f.BeginRebuild(ctx, rdb, 0, 60_000)
	require.NoError(t, err)
	ok, err := r.Finish(ctx) // a complete, empty filter: every uid is new
	require.NoError(t, err)
	require.True(t, ok)
	known := func(uid string) KnownAnswer {
		t.Helper()
		a, err := s.knownCheck(ctx, uid)
		require.NoError(t, err)
		return a
	}
	queued := func() []event.Event {
		t.Helper()
		raw, err := rdb.LRange(ctx, keys.Queue(0), 0, -1).Result()
		require.NoError(t, err)
		evs := make([]event.Event, len(raw))
		for i, r := range raw {
			evs[i], err = event.Decode([]byte(r))
			require.NoError(t, err)
		}
		return evs
	}

	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	next := &popup.UserState{Day: popup.DayNumber(at), DayCount: 1, Popups: popup.StatesOf(map[int64]popup.PopupState{
		7: {Impressions: 1, LastImpressionAt: at}, 8: {Impressions: 1, LastImpressionAt: at, NextShowAt: at.Add(time.Hour)}})}
	evs := []event.Event{
		{ID: "d1~7.2-x", UID: "u1", PopupID: 7, Action: event.Exposure, At: at, DecisionID: "d1~7.2", Impressions: 1,
			Arms: []event.ArmRef{{PopupID: 7, Salt: "3f9a0c2b7d1e4a65", Arm: "control"}}},
		{ID: "d1~7.2", UID: "u1", PopupID: 8, Action: event.Impression, At: at, DecisionID: "d1~7.2", Impressions: 1, DayCount: 1},
	}

	out, err := s.Reserve(ctx, "u1", "", next, "d1~7.2", 8, evs, time.Minute)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)
	out, err = s.Reserve(ctx, "u1", "", next, "d2", 8, evs, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, popup.Busy, out, "one pending reservation per user")
	gotNext, gotEvs, ok, err := s.Reservation(ctx, "u1", "d1~7.2", 8)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, next.Popups, gotNext.Popups)
	require.Len(t, gotEvs, 2)
	assert.Equal(t, evs[0].Arms, gotEvs[0].Arms)
	assert.Equal(t, evs[1].ID, gotEvs[1].ID)
	_, _, ok, err = s.Reservation(ctx, "u1", "d1~7.2", 7)
	require.NoError(t, err)
	assert.False(t, ok, "another popup's reservation")
	assert.Empty(t, queued(), "a reservation queues nothing")
	assert.Zero(t, rdb.Exists(ctx, keys.User("u1")).Val(), "nor writes the state")
	assert.Equal(t, KnownNew, known("u1"), "nor adds the uid to the filter")

	for _, wrong := range []struct {
		decision string
		popup    int64
	}{{"d2", 8}, {"d1~7.2", 7}} {
		out, err = s.Confirm(ctx, "u1", wrong.decision, wrong.popup)
		require.NoError(t, err)
		assert.Equal(t, popup.Expired, out, "%s of popup %d was never reserved", wrong.decision, wrong.popup)
	}
	out, err = s.Confirm(ctx, "u1", "d1~7.2", 8)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)
	out, err = s.Confirm(ctx, "u1", "d1~7.2", 8)
	require.NoError(t, err)
	assert.Equal(t, popup.Duplicate, out, "a retried confirmation")
	got := queued()
	require.Len(t, got, 2, "the events queued once")
	assert.Equal(t, []string{evs[0].ID, evs[1].ID}, []string{got[0].ID, got[1].ID})
	st, err := s.Get(ctx, "u1", at)
	require.NoError(t, err)
	assert.Equal(t, next.Popups, st.Popups)
	assert.Equal(t, KnownMaybe, known("u1"), "a confirmed first state adds the uid to the filter")
	_, _, ok, err = s.Reservation(ctx, "u1", "d1~7.2", 8)
	require.NoError(t, err)
	assert.False(t, ok, "confirmed: pending no more")

	// A confirmed reservation holds nothing back; one planned on a state since replaced is a
	// conflict, and is applied as re-planned on the state as it is.
	out, err = s.Reserve(ctx, "u1", st.Raw, next, "d3", 7, evs[1:], time.Minute)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)
	click := []event.Event{{ID: "c1", UID: "u1", PopupID: 9, Action: event.Click, At: at}}
	out, err = s.Record(ctx, "u1", st.Raw, &popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{9: {LastClickAt: at}})}, click, true)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)
	out, err = s.Confirm(ctx, "u1", "d3", 7)
	require.NoError(t, err)
	assert.Equal(t, popup.Conflict, out)
	cur, err := s.Get(ctx, "u1", at)
	require.NoError(t, err)
	replanned := &popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{9: {LastClickAt: at}, 7: {Impressions: 2, LastImpressionAt: at}})}
	out, err = s.ConfirmOn(ctx, "u1", "d3", 7, cur.Raw, replanned, evs[1:])
	require.NoError(t, err)
	assert.Equal(t, popup.Recorded, out)
	st, err = s.Get(ctx, "u1", at)
	require.NoError(t, err)
	assert.Equal(t, replanned.Popups, st.Popups)
	assert.Len(t, queued(), 4, "the click and the re-planned impression")
}

// TestErasureEndsAPendingReservation: erasing a user removes a reservation still waiting for its
// confirmation (it names the uid, and holds the state and events planned for it), so a
// confirmation that arrives after the erasure finds nothing: it writes no state and queues no
// event of the erased user, and no key names the uid any more.
func TestErasureEndsAPendingReservation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 1}
	s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	const uid = "erased-while-reserved"
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	next := &popup.UserState{Day: popup.DayNumber(at), DayCount: 1, Popups: popup.StatesOf(map[int64]popup.PopupState{
		8: {Impressions: 1, LastImpressionAt: at}})}
	evs := []event.Event{{ID: "d9", UID: uid, PopupID: 8, Action: event.Impression, At: at, DecisionID: "d9", Impressions: 1, DayCount: 1}}
	out, err := s.Reserve(ctx, uid, "", next, "d9", 8, evs, time.Minute)
	require.NoError(t, err)
	require.Equal(t, popup.Recorded, out)

	_, err = NewEraser(rdb, keys).EraseState(ctx, uid)
	require.NoError(t, err)
	all, err := testenv.RedisKeys(ctx, rdb, keys.Prefix+"*")
	require.NoError(t, err)
	for _, k := range all {
		assert.NotContains(t, k, uid, "a key names the erased uid")
	}

	out, err = s.Confirm(ctx, uid, "d9", 8)
	require.NoError(t, err)
	assert.Equal(t, popup.Expired, out, "the reservation went with the erasure")
	assert.Zero(t, rdb.Exists(ctx, keys.User(uid)).Val(), "no state of the erased user again")
	assert.Zero(t, rdb.LLen(ctx, keys.Queue(0)).Val(), "no event of the erased user queued")
}
