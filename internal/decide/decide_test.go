package decide_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// t0 is 10:00 UTC, so "the end of the day" is 14 hours later.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// memStore is an in-memory decide.UserStates that counts reads: a local answer must make none.
type memStore struct {
	mu      sync.Mutex
	states  map[string]popup.UserState
	revs    map[string]int
	gets    atomic.Int64
	fail    error         // returned by every call when set
	force   popup.Outcome // returned by Record instead of writing, when forcing
	forcing bool
	events  []event.Event // every event recorded, in order
}

func newMemStore() *memStore {
	return &memStore{states: map[string]popup.UserState{}, revs: map[string]int{}}
}

func (m *memStore) Get(_ context.Context, uid string, _ time.Time) (popup.StoredState, error) {
	m.gets.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return popup.StoredState{}, m.fail
	}
	st := m.states[uid]
	st.Popups = st.Popups.Clone()
	return popup.StoredState{UserState: st, Raw: strconv.Itoa(m.revs[uid])}, nil
}

func (m *memStore) Record(_ context.Context, uid, prev string, next *popup.UserState, evs []event.Event, _ bool) (popup.Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return 0, m.fail
	}
	if m.forcing {
		return m.force, nil
	}
	if prev != strconv.Itoa(m.revs[uid]) {
		return popup.Conflict, nil
	}
	m.revs[uid]++
	st := *next
	st.Popups = next.Popups.Clone()
	m.states[uid] = st
	m.events = append(m.events, evs...)
	return popup.Recorded, nil
}

// set replaces uid's state, as another instance's write would.
func (m *memStore) set(uid string, st popup.UserState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revs[uid]++
	m.states[uid] = st
}

func active(id int64, mod func(*popup.Popup)) popup.Popup {
	p := popup.Popup{ID: id, Name: "p" + strconv.FormatInt(id, 10), Status: popup.StatusActive, Priority: 10,
		Targeting: popup.Targeting{RolloutPercent: 100}, ReshowAfterSeconds: 3600, CloseCooldownSeconds: 3600,
		Creative: popup.Creative{
			Title: "hi",
		},
	}
	if mod != nil {
		mod(&p)
	}
	return p
}

type fixture struct {
	holder *snapshot.Holder
	store  *memStore
	d      *decide.Decider
	pace   popup.Pacing  // every snapshot's
	hold   popup.Holdout // every snapshot's holdout (the zero value: none)
}

func newFixture(t *testing.T, cacheSize int, pace popup.Pacing, popups ...popup.Popup) *fixture {
	t.Helper()
	f := &fixture{holder: &snapshot.Holder{}, store: newMemStore(), pace: pace}
	f.publish(t, 1, popups...)
	f.d = &decide.Decider{Snapshots: f.holder, Users: f.store, Breakers: breaker.NewSet(1, 5, time.Second, nil),
		Budget: time.Second, Local: decide.NewLocalAnswers(cacheSize), Metrics: decide.NewMetrics(nil)}
	return f
}

func (f *fixture) publish(t *testing.T, version int64, popups ...popup.Popup) {
	t.Helper()
	f.publishOn(t, version, nil, popups...)
}

// publishOn publishes popups as version bound to the audience sets (nil: none held).
func (f *fixture) publishOn(t *testing.T, version int64, sets *audience.Sets, popups ...popup.Popup) {
	t.Helper()
	s := snapshot.BuildWith(version, popups, t0, popup.LinkSchemes{}, sets)
	s.Pacing = f.pace
	s.SetHoldout(f.hold)
	require.Empty(t, s.Problems)
	require.True(t, f.holder.Store(s))
}

var iosReq = popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: "en"}

// decide runs one decision and reports its kind, the popup id (0 for none) and whether it read the store.
func (f *fixture) decide(t *testing.T, req popup.Request, now time.Time) (decide.Kind, int64, bool) {
	t.Helper()
	before := f.store.gets.Load()
	a := f.d.Decide(context.Background(), req, now)
	var id int64
	if a.Popup != nil {
		id = a.Popup.Compiled.Popup.ID
	}
	return a.Kind, id, f.store.gets.Load() != before
}

func TestDecideShowsThenRemembersNothingUntilTheReshow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, popup.Pacing{}, active(1, nil))

	kind, id, read := f.decide(t, iosReq, t0)
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(1), id)
	assert.True(t, read)

	kind, _, read = f.decide(t, iosReq, t0.Add(time.Minute))
	assert.Equal(t, decide.None, kind)
	assert.True(t, read, "the first 'nothing' is a full decision")

	for _, at := range []time.Duration{2 * time.Minute, 30 * time.Minute, time.Hour - time.Second} {
		kind, _, read = f.decide(t, iosReq, t0.Add(at))
		assert.Equal(t, decide.None, kind)
		assert.False(t, read, "at +%v the local answer holds: no store read", at)
	}
	kind, id, read = f.decide(t, iosReq, t0.Add(time.Hour))
	assert.True(t, read, "at the reshow instant the local answer has expired")
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(1), id)
}

// hidden is a popup for every request, which u1 saw at t0 and will not see again for two days.
var hidden = active(9, func(p *popup.Popup) { p.Priority = 1 })

func withHidden(st popup.UserState) popup.UserState {
	st.Popups = st.Popups.Clone()
	st.Popups.Set(9, popup.PopupState{NextShowAt: t0.Add(48 * time.Hour), Impressions: 1, LastImpressionAt: t0})
	return st
}

// TestLocalAnswerInvalidation covers each way a remembered "nothing" must stop answering.
func TestLocalAnswerInvalidation(t *testing.T) {
	t.Parallel()
	later := t0.Add(2 * time.Hour)
	tests := []struct {
		name     string
		popups   []popup.Popup
		dailyCap int
		state    popup.UserState // the user's state before the first request
		// change happens after the first (remembered) "nothing"; nil for none
		change func(t *testing.T, f *fixture)
		// at is when the second request comes; wantRead whether it must read the store, wantID what it shows
		at       time.Time
		req      popup.Request
		wantRead bool
		wantID   int64
	}{
		{
			name:     "held before the cooldown ends",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.ClickCooldownSeconds = 86400 })},
			state:    popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: t0.Add(5 * time.Hour), LastClickAt: t0.Add(-19 * time.Hour)}})},
			at:       t0.Add(5*time.Hour - time.Second),
			req:      iosReq,
			wantRead: false,
		},
		{
			name:     "expires at the cooldown's end",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.ClickCooldownSeconds = 86400 })},
			state:    popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: t0.Add(5 * time.Hour), LastClickAt: t0.Add(-19 * time.Hour)}})},
			at:       t0.Add(5 * time.Hour),
			req:      iosReq,
			wantRead: true, wantID: 1,
		},
		{
			name:     "expires at a schedule's start",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       later,
			req:      iosReq,
			wantRead: true, wantID: 1,
		},
		{
			name:     "held before a schedule's start",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       later.Add(-time.Second),
			req:      iosReq,
			wantRead: false,
		},
		{
			name:     "expires at the end of the UTC day of the daily cap",
			popups:   []popup.Popup{active(1, nil)},
			dailyCap: 2,
			state:    popup.UserState{Day: popup.DayNumber(t0), DayCount: 2},
			at:       time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
			req:      iosReq,
			wantRead: true, wantID: 1,
		},
		{
			name:     "held until the end of the UTC day of the daily cap",
			popups:   []popup.Popup{active(1, nil)},
			dailyCap: 2,
			state:    popup.UserState{Day: popup.DayNumber(t0), DayCount: 2},
			at:       time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC),
			req:      iosReq,
			wantRead: false,
		},
		{
			name:   "a config change (version bump) drops it",
			popups: []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			change: func(t *testing.T, f *fixture) {
				f.publish(t, 2, active(1, nil), hidden) // the operator starts it now
			},
			at:       t0.Add(time.Second),
			req:      iosReq,
			wantRead: true, wantID: 1,
		},
		{
			name:   "a config change that changes nothing for the user still drops it",
			popups: []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			change: func(t *testing.T, f *fixture) {
				f.publish(t, 2, active(1, func(p *popup.Popup) { p.StartAt = &later; p.Title = "new title" }), hidden)
			},
			at:       t0.Add(time.Second),
			req:      iosReq,
			wantRead: true,
		},
		{
			name:     "another uid is another key",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       t0.Add(time.Second),
			req:      popup.Request{UID: "u2", Platform: iosReq.Platform, AppVersion: iosReq.AppVersion, Region: iosReq.Region, Lang: iosReq.Lang},
			wantRead: true, wantID: 9, // u2 has not seen popup 9
		},
		{
			name:     "another app version is another key",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       t0.Add(time.Second),
			req:      popup.Request{UID: iosReq.UID, Platform: iosReq.Platform, AppVersion: popup.Version{9}, Region: iosReq.Region, Lang: iosReq.Lang},
			wantRead: true,
		},
		{
			name:     "another platform is another key",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       t0.Add(time.Second),
			req:      popup.Request{UID: iosReq.UID, Platform: popup.PlatformAndroid, AppVersion: iosReq.AppVersion, Region: iosReq.Region, Lang: iosReq.Lang},
			wantRead: true,
		},
		{
			name:     "another region is another key",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       t0.Add(time.Second),
			req:      popup.Request{UID: iosReq.UID, Platform: iosReq.Platform, AppVersion: iosReq.AppVersion, Region: "cn", Lang: iosReq.Lang},
			wantRead: true,
		},
		{
			name:     "another language is another key",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       t0.Add(time.Second),
			req:      popup.Request{UID: iosReq.UID, Platform: iosReq.Platform, AppVersion: iosReq.AppVersion, Region: iosReq.Region, Lang: "zh"},
			wantRead: true,
		},
		{
			name:     "the same targeting attributes are the same key",
			popups:   []popup.Popup{active(1, func(p *popup.Popup) { p.StartAt = &later })},
			at:       t0.Add(time.Second),
			req:      iosReq,
			wantRead: false,
		},
		{
			name:   "another instance's impression only pushes the instant later: still held",
			popups: []popup.Popup{active(1, nil)},
			state:  popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: t0.Add(time.Hour), Impressions: 1}})},
			change: func(t *testing.T, f *fixture) {
				f.store.set("u1", withHidden(popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: t0.Add(3 * time.Hour), Impressions: 2}})}))
			},
			at:       t0.Add(time.Hour - time.Second),
			req:      iosReq,
			wantRead: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Popup 9 targets every request and u1 saw it: it is why u1's request reads the
			// store at all (a request nothing targets in window is answered without one).
			f := newFixture(t, 1000, popup.Pacing{DailyCap: tt.dailyCap}, append(tt.popups, hidden)...)
			f.store.set("u1", withHidden(tt.state))
			kind, _, read := f.decide(t, iosReq, t0)
			require.Equal(t, decide.None, kind)
			require.True(t, read)
			if tt.change != nil {
				tt.change(t, f)
			}

			kind, id, read := f.decide(t, tt.req, tt.at)
			assert.Equal(t, tt.wantRead, read, "store read")
			assert.Equal(t, tt.wantID, id)
			if tt.wantID == 0 {
				assert.Equal(t, decide.None, kind)
			}
		})
	}
}

func TestLocalAnswerNeverShowingIsHeldUntilAConfigChange(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, popup.Pacing{}, active(1, func(p *popup.Popup) { p.MaxImpressions = 1 }))
	f.store.set("u1", popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {Impressions: 1}})})
	_, _, read := f.decide(t, iosReq, t0)
	require.True(t, read)
	_, _, read = f.decide(t, iosReq, t0.Add(1000*24*time.Hour))
	assert.False(t, read, "max impressions reached: nothing until the config changes")
	f.publish(t, 2, active(1, func(p *popup.Popup) { p.MaxImpressions = 2 }))
	kind, id, read := f.decide(t, iosReq, t0.Add(1000*24*time.Hour))
	assert.True(t, read)
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(1), id)
}

// TestNotRemembered: degraded answers, conflicts and errors say nothing about the user.
func TestNotRemembered(t *testing.T) {
	t.Parallel()
	later := t0.Add(time.Hour)
	tests := []struct {
		name  string
		setup func(f *fixture)
		want  decide.Kind
	}{
		{"a store error", func(f *fixture) { f.store.fail = errors.New("redis down") }, decide.Degraded},
		{"a load error", func(f *fixture) { f.store.fail = popup.ErrStateLoad }, decide.Degraded},
		{"conflicts until the retries run out", func(f *fixture) { f.store.forcing, f.store.force = true, popup.Conflict }, decide.None},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Popup 2 is eligible (so a decision records), popup 1 starts later: were "nothing"
			// remembered after a failure, it would hide popup 2.
			f := newFixture(t, 1000, popup.Pacing{}, active(1, func(p *popup.Popup) { p.StartAt = &later }), active(2, nil))
			tt.setup(f)
			kind, _, _ := f.decide(t, iosReq, t0)
			require.Equal(t, tt.want, kind)
			f.store.fail, f.store.forcing = nil, false
			f.d.Breakers = breaker.NewSet(1, 5, time.Second, nil)
			kind, id, read := f.decide(t, iosReq, t0.Add(time.Second))
			assert.True(t, read)
			assert.Equal(t, decide.Shown, kind)
			assert.Equal(t, int64(2), id)
		})
	}
}

func TestLocalAnswersOff(t *testing.T) {
	t.Parallel()
	later := t0.Add(time.Hour)
	f := newFixture(t, 0, popup.Pacing{}, active(1, func(p *popup.Popup) { p.StartAt = &later }), hidden)
	f.store.set("u1", withHidden(popup.UserState{}))
	require.Nil(t, f.d.Local)
	for i := 0; i < 3; i++ {
		_, _, read := f.decide(t, iosReq, t0)
		assert.True(t, read)
	}
}

func TestActRecordsAndMapsOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		popupID int64
		setup   func(f *fixture)
		want    error
	}{
		{"recorded", 1, nil, nil},
		{"a duplicate is accepted", 1, func(f *fixture) { f.store.forcing, f.store.force = true, popup.Duplicate }, nil},
		{"rate limited", 1, func(f *fixture) { f.store.forcing, f.store.force = true, popup.RateLimited }, decide.ErrRateLimited},
		{"conflicts until the retries run out", 1, func(f *fixture) { f.store.forcing, f.store.force = true, popup.Conflict }, decide.ErrUnavailable},
		{"store down", 1, func(f *fixture) { f.store.fail = errors.New("down") }, decide.ErrUnavailable},
		{"unknown popup", 99, nil, popup.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 1000, popup.Pacing{}, active(1, func(p *popup.Popup) { p.ClickCooldownSeconds = 600 }))
			if tt.setup != nil {
				tt.setup(f)
			}
			err := f.d.Act(context.Background(), decide.Report{UID: "u1", PopupID: tt.popupID, Kind: event.Click}, t0)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	t.Run("a click hides the popup for its cooldown", func(t *testing.T) {
		f := newFixture(t, 1000, popup.Pacing{}, active(1, func(p *popup.Popup) { p.ClickCooldownSeconds = 600 }))
		require.NoError(t, f.d.Act(context.Background(), decide.Report{UID: "u1", PopupID: 1, Kind: event.Click}, t0))
		kind, _, _ := f.decide(t, iosReq, t0.Add(599*time.Second))
		assert.Equal(t, decide.None, kind)
		kind, _, _ = f.decide(t, iosReq, t0.Add(600*time.Second))
		assert.Equal(t, decide.Shown, kind)
	})
}

func TestExplainRecordsNothingAndTakesADraft(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, popup.Pacing{}, active(1, nil), active(2, func(p *popup.Popup) { p.Priority = 5 }))
	ex, err := f.d.Explain(context.Background(), iosReq, t0, decide.ExplainOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), ex.Version)
	require.NotNil(t, ex.Chosen)
	assert.Equal(t, int64(1), ex.Chosen.Popup.ID)
	assert.NotEmpty(t, ex.Shown)
	assert.Equal(t, []popup.Reason{popup.ReasonNone, popup.ReasonLowerPriority}, reasons(ex.Candidates))

	kind, id, _ := f.decide(t, iosReq, t0)
	assert.Equal(t, decide.Shown, kind, "the explanation recorded no impression")
	assert.Equal(t, int64(1), id)

	draft, err := popup.CompileWith(active(3, func(p *popup.Popup) { p.Priority = 50 }), popup.LinkSchemes{})
	require.NoError(t, err)
	ex, err = f.d.Explain(context.Background(), iosReq, t0.Add(time.Minute), decide.ExplainOptions{Extra: []*popup.Compiled{draft}})
	require.NoError(t, err)
	require.NotNil(t, ex.Chosen)
	assert.Equal(t, int64(3), ex.Chosen.Popup.ID, "the draft outranks the live popups")
	assert.Nil(t, ex.Shown, "a draft has no published JSON")
	assert.Equal(t, []popup.Reason{popup.ReasonNone, popup.ReasonReshow, popup.ReasonLowerPriority}, reasons(ex.Candidates))
}

func reasons(cs []popup.Candidate) []popup.Reason {
	out := make([]popup.Reason, len(cs))
	for i, c := range cs {
		out[i] = c.Reason
	}
	return out
}

// BenchmarkDecideSteadyState is a warm user with nothing to show, answered locally (on) or by
// reading the state from the store (off; the in-memory store stands in for Redis, so the round
// trip itself is not in the figure).
func BenchmarkDecideSteadyState(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"local answers on", 100000}, {"local answers off", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			holder := &snapshot.Holder{}
			holder.Store(snapshot.BuildWith(1, []popup.Popup{active(1, nil), hidden}, t0, popup.LinkSchemes{}, nil))
			store := newMemStore()
			store.set("u1", withHidden(popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: t0.Add(time.Hour), Impressions: 1}})}))
			d := &decide.Decider{Snapshots: holder, Users: store, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
				Local: decide.NewLocalAnswers(bc.size), Metrics: decide.NewMetrics(nil)}
			ctx := context.Background()
			now := t0.Add(time.Minute)
			if a := d.Decide(ctx, iosReq, now); a.Kind != decide.None {
				b.Fatalf("want nothing, got %v", a.Kind)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Decide(ctx, iosReq, now)
			}
		})
	}
}
