package decide_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

// recentMem is memStore's decide.RecentStates: the state each uid's last Recorded record wrote,
// as redisstore.UserStore remembers it, possibly stale once another instance writes (memStore.set).
type recentMem struct {
	*memStore
	mu   sync.Mutex
	last map[string]popup.StoredState
}

func (r *recentMem) Record(ctx context.Context, uid, prev string, next *popup.UserState, evs []event.Event, dedupe bool) (popup.Outcome, error) {
	out, err := r.memStore.Record(ctx, uid, prev, next, evs, dedupe)
	if err == nil && out == popup.Recorded {
		r.memStore.mu.Lock()
		raw := strconv.Itoa(r.memStore.revs[uid])
		r.memStore.mu.Unlock()
		st := *next
		st.Popups = next.Popups.Clone()
		r.mu.Lock()
		r.last[uid] = popup.StoredState{UserState: st, Raw: raw}
		r.mu.Unlock()
	}
	return out, err
}

func (r *recentMem) Recent(uid string) (popup.StoredState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.last[uid]
	st.UserState.Popups = st.UserState.Popups.Clone()
	return st, ok
}

// recentFixture decides with remembered states and without local answers (so that every
// "nothing" is a full decision).
func recentFixture(t *testing.T, popups ...popup.Popup) (*fixture, *recentMem) {
	t.Helper()
	f := newFixture(t, 0, popup.Pacing{}, popups...)
	r := &recentMem{memStore: f.store, last: map[string]popup.StoredState{}}
	f.d.Users, f.d.Recent = r, r
	return f, r
}

func TestDecideRecordsARecentStateWithoutReadingIt(t *testing.T) {
	t.Parallel()
	f, _ := recentFixture(t, active(1, func(p *popup.Popup) { p.ReshowAfterSeconds = 60 }))

	kind, _, read := f.decide(t, iosReq, t0)
	require.Equal(t, decide.Shown, kind)
	assert.True(t, read, "nothing remembered yet: the state is read")

	kind, id, read := f.decide(t, iosReq, t0.Add(time.Minute))
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(1), id)
	assert.False(t, read, "the state this process recorded is the stored one: no read")
	assert.Equal(t, 2, f.store.states["u1"].Popups.Get(1).Impressions, "both impressions recorded")
}

// TestDecideReadsWhenTheRecentStateIsNotTheStoredOne: u1 was shown popup 1 at t0 (reshow an
// hour) by this process; then another write replaced the stored state.
func TestDecideReadsWhenTheRecentStateIsNotTheStoredOne(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		stored          popup.UserState // what the other write left
		at              time.Time
		wantKind        decide.Kind
		wantImpressions int // of popup 1 in the stored state after the decision
	}{
		{
			// The remembered state shows the popup again; the record on it conflicts.
			name: "another instance showed it later", at: t0.Add(time.Hour + time.Minute),
			stored: popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{
				1: {NextShowAt: t0.Add(2 * time.Hour), Impressions: 2, LastImpressionAt: t0.Add(time.Hour)}})},
			wantKind: decide.None, wantImpressions: 2,
		},
		{
			// The remembered state shows nothing: never answered from it.
			name: "an erasure emptied it", at: t0.Add(time.Minute),
			stored:   popup.UserState{},
			wantKind: decide.Shown, wantImpressions: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := recentFixture(t, active(1, func(p *popup.Popup) { p.ReshowAfterSeconds = 3600 }))
			kind, _, _ := f.decide(t, iosReq, t0)
			require.Equal(t, decide.Shown, kind)
			f.store.set("u1", tt.stored)

			kind, _, read := f.decide(t, iosReq, tt.at)
			assert.Equal(t, tt.wantKind, kind)
			assert.True(t, read, "the stored state was read")
			assert.Equal(t, tt.wantImpressions, f.store.states["u1"].Popups.Get(1).Impressions)
		})
	}
}
