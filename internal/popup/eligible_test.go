package popup_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestNextEligibleAt(t *testing.T) {
	t.Parallel()
	req := popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: "en"}
	tomorrow := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC) // the end of now's UTC day
	seenToday := func(popups map[int64]popup.PopupState, count int) *popup.UserState {
		return &popup.UserState{Popups: popup.StatesOf(popups), Day: popup.DayNumber(now), DayCount: count}
	}
	tests := []struct {
		name     string
		specs    []spec
		state    *popup.UserState
		dailyCap int
		want     time.Time // zero: never
	}{
		{name: "no candidates: never", want: time.Time{}},
		{name: "eligible now: now", specs: []spec{{1, 10, nil}}, want: now},
		{
			name:  "reshow interval: its next show time",
			specs: []spec{{1, 10, nil}},
			state: userState(map[int64]popup.PopupState{1: seen(now.Add(-time.Minute), now.Add(59*time.Minute))}),
			want:  now.Add(59 * time.Minute),
		},
		{
			name:  "click cooldown: its end",
			specs: []spec{{1, 10, rules(3600, 7*86400, 3600, 0)}},
			state: userState(map[int64]popup.PopupState{1: clicked(now.Add(-day), now.Add(6*day))}),
			want:  now.Add(6 * day),
		},
		{
			name:  "close cooldown: its end",
			specs: []spec{{1, 10, rules(3600, 0, 7200, 0)}},
			state: userState(map[int64]popup.PopupState{1: closed(now.Add(-time.Hour), now.Add(time.Hour))}),
			want:  now.Add(time.Hour),
		},
		{
			name:  "the earliest of several hidden popups",
			specs: []spec{{1, 50, nil}, {2, 10, nil}, {3, 5, nil}},
			state: userState(map[int64]popup.PopupState{
				1: seen(now, now.Add(3*time.Hour)), 2: seen(now, now.Add(time.Hour)), 3: seen(now, now.Add(2*time.Hour)),
			}),
			want: now.Add(time.Hour),
		},
		{
			name:  "schedule not started: its start",
			specs: []spec{{1, 10, window(now.Add(2*time.Hour), now.Add(day))}},
			want:  now.Add(2 * time.Hour),
		},
		{
			name:  "schedule start later than the cooldown: the start",
			specs: []spec{{1, 10, window(now.Add(2*time.Hour), now.Add(day))}},
			state: userState(map[int64]popup.PopupState{1: seen(now, now.Add(time.Hour))}),
			want:  now.Add(2 * time.Hour),
		},
		{
			name:  "cooldown later than the schedule start: the cooldown's end",
			specs: []spec{{1, 10, window(now.Add(time.Hour), now.Add(day))}},
			state: userState(map[int64]popup.PopupState{1: seen(now, now.Add(3*time.Hour))}),
			want:  now.Add(3 * time.Hour),
		},
		{
			name:  "cooldown outlasting the schedule: never",
			specs: []spec{{1, 10, window(now.Add(-time.Hour), now.Add(time.Hour))}},
			state: userState(map[int64]popup.PopupState{1: seen(now, now.Add(2*time.Hour))}),
			want:  time.Time{},
		},
		{
			name:  "cooldown ending exactly at the schedule's end: never (the window is half-open)",
			specs: []spec{{1, 10, window(now.Add(-time.Hour), now.Add(time.Hour))}},
			state: userState(map[int64]popup.PopupState{1: seen(now, now.Add(time.Hour))}),
			want:  time.Time{},
		},
		{name: "schedule ended: never", specs: []spec{{1, 10, window(now.Add(-day), now.Add(-time.Hour))}}, want: time.Time{}},
		{name: "paused: never", specs: []spec{{1, 10, status(popup.StatusPaused)}}, want: time.Time{}},
		{
			name: "other platform: never, even once its schedule starts",
			specs: []spec{{1, 10, func(in *popup.Input) {
				targeting(popup.TargetingInput{Platforms: []string{"android"}})(in)
				window(now.Add(time.Hour), now.Add(day))(in)
			}}},
			want: time.Time{},
		},
		{name: "other region: never", specs: []spec{{1, 10, targeting(popup.TargetingInput{Regions: []string{"cn"}})}}, want: time.Time{}},
		{name: "other language: never", specs: []spec{{1, 10, targeting(popup.TargetingInput{Langs: []string{"zh"}})}}, want: time.Time{}},
		{name: "app version too old: never", specs: []spec{{1, 10, targeting(popup.TargetingInput{MinAppVersion: "9"})}}, want: time.Time{}},
		{name: "outside the rollout: never", specs: []spec{{1, 10, targeting(popup.TargetingInput{RolloutPercent: ptr(0)})}}, want: time.Time{}},
		{
			name:  "max impressions reached: never",
			specs: []spec{{1, 10, rules(3600, 0, 3600, 2)}},
			state: userState(map[int64]popup.PopupState{1: {Impressions: 2, NextShowAt: now.Add(time.Hour)}}),
			want:  time.Time{},
		},
		{
			name:  "clicked never again: never",
			specs: []spec{{1, 10, rules(3600, -1, 3600, 0)}},
			state: userState(map[int64]popup.PopupState{1: clicked(now.Add(-time.Hour), popup.Forever)}),
			want:  time.Time{},
		},
		{
			name:     "daily cap reached: the end of the UTC day",
			specs:    []spec{{1, 10, nil}},
			state:    seenToday(nil, 3),
			dailyCap: 3,
			want:     tomorrow,
		},
		{
			name:     "daily cap reached, cooldown ending after midnight: the cooldown's end",
			specs:    []spec{{1, 10, nil}},
			state:    seenToday(map[int64]popup.PopupState{1: seen(now, tomorrow.Add(time.Hour))}, 3),
			dailyCap: 3,
			want:     tomorrow.Add(time.Hour),
		},
		{
			name:     "daily cap reached but nothing could ever show: never",
			specs:    []spec{{1, 10, status(popup.StatusPaused)}},
			state:    seenToday(nil, 3),
			dailyCap: 3,
			want:     time.Time{},
		},
		{
			name:     "yesterday's count does not cap today",
			specs:    []spec{{1, 10, nil}},
			state:    &popup.UserState{Day: popup.DayNumber(now) - 1, DayCount: 3},
			dailyCap: 3,
			want:     now,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := candidates(t, tt.specs...)
			got := popup.NextEligibleAt(cs, req, tt.state, now, popup.Pacing{DailyCap: tt.dailyCap})
			assert.True(t, tt.want.Equal(got), "want %v, got %v", tt.want, got)
		})
	}
}

// TestNextEligibleAtAgreesWithSelect checks the promise callers rely on: Select chooses nothing
// before the instant NextEligibleAt names, and something at it.
func TestNextEligibleAtAgreesWithSelect(t *testing.T) {
	t.Parallel()
	req := popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}}
	cs := candidates(t, spec{1, 50, window(now.Add(5*time.Hour), now.Add(day))}, spec{2, 10, nil}, spec{3, 5, rules(3600, 0, 3600, 1)})
	state := &popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{
		2: seen(now, now.Add(2*time.Hour)), 3: {Impressions: 1, NextShowAt: now.Add(time.Hour)},
	}), Day: popup.DayNumber(now), DayCount: 1}

	at := popup.NextEligibleAt(cs, req, state, now, popup.Pacing{DailyCap: 2})
	assert.Equal(t, now.Add(2*time.Hour), at)
	for tm := now; tm.Before(at); tm = tm.Add(time.Minute) {
		assert.Nil(t, popup.Select(cs, req, state, tm, popup.Pacing{DailyCap: 2}), "nothing at %v", tm)
	}
	assert.NotNil(t, popup.Select(cs, req, state, at, popup.Pacing{DailyCap: 2}))
}

func TestNextEligibleAtDoesNotAllocate(t *testing.T) {
	req := popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us"}
	cs := candidates(t, spec{1, 50, targeting(popup.TargetingInput{Regions: []string{"us", "cn"}})}, spec{2, 10, nil})
	state := userState(map[int64]popup.PopupState{1: seen(now, now.Add(time.Hour)), 2: seen(now, now.Add(time.Hour))})
	allocs := testing.AllocsPerRun(100, func() { popup.NextEligibleAt(cs, req, state, now, popup.Pacing{DailyCap: 3}) })
	assert.Zero(t, allocs)
}

// randomCase is a random list of popups (some exempt from caps or the holdout, some targeted at
// another region, some on a schedule), a user state that saw some of them (hidden for a while,
// or due again) and a pacing (daily cap, min gap, the holdout), for the property tests below.
func randomCase(t *testing.T, rng *rand.Rand) ([]*popup.Compiled, *popup.UserState, popup.Pacing) {
	n := 1 + rng.IntN(8)
	specs := make([]spec, n)
	state := &popup.UserState{Day: popup.DayNumber(now), DayCount: rng.IntN(4),
		LastShownAt: now.Add(-time.Duration(rng.IntN(7200)) * time.Second)}
	for i := range specs {
		id := int64(i + 1)
		exempt, holdoutExempt, region := rng.IntN(4) == 0, rng.IntN(3) == 0, [...]string{"us", "us", "cn"}[rng.IntN(3)]
		var start *time.Time
		if rng.IntN(4) == 0 {
			s := now.Add(time.Duration(rng.IntN(48)-12) * time.Hour)
			start = &s
		}
		specs[i] = spec{id, rng.IntN(100), func(in *popup.Input) {
			in.ExemptFromCaps, in.HoldoutExempt = exempt, holdoutExempt
			in.Targeting = &popup.TargetingInput{Regions: []string{region}}
			if start != nil {
				end := start.Add(time.Duration(1+rng.IntN(72)) * time.Hour)
				in.StartAt, in.EndAt = start, &end
			}
		}}
		if rng.IntN(2) == 0 {
			state.Popups.Set(id, seen(now.Add(-time.Hour), now.Add(time.Duration(rng.IntN(72)-12)*time.Hour)))
		}
	}
	pace := popup.Pacing{DailyCap: rng.IntN(4), MinGap: time.Duration(rng.IntN(3)) * time.Hour, HeldOut: rng.IntN(4) == 0}
	return candidates(t, specs...), state, pace
}

var caseRequest = popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us"}

// TestNextEligibleAtIsTheEarliestOfEach checks the shortcut NextEligibleAt takes (it stops
// looking at popups that cannot show before the pacing's end once one is due then) against its
// definition: over random cases, the answer is the earliest of each popup's answer alone.
func TestNextEligibleAtIsTheEarliestOfEach(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(51, 2))
	for round := range 300 {
		cs, state, pace := randomCase(t, rng)
		var want time.Time
		for i := range cs {
			if at := popup.NextEligibleAt(cs[i:i+1], caseRequest, state, now, pace); !at.IsZero() && (want.IsZero() || at.Before(want)) {
				want = at
			}
		}
		got := popup.NextEligibleAt(cs, caseRequest, state, now, pace)
		require.True(t, want.Equal(got), "round %d: want %v, got %v", round, want, got)
	}
}

// TestNextEligibleAtIsWhenReasonClears checks NextEligibleAt against the eligibility rule it
// inverts: over random cases, Select (which chooses by it) chooses nothing at now and at
// instants before the answer, and something at it; for "never", nothing over the next 30 days.
func TestNextEligibleAtIsWhenReasonClears(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(51, 3))
	for round := range 300 {
		cs, state, pace := randomCase(t, rng)
		at := popup.NextEligibleAt(cs, caseRequest, state, now, pace)
		before := []time.Time{now, now.Add(time.Hour), now.Add(26 * time.Hour), now.Add(30 * day)}
		if !at.IsZero() {
			before = []time.Time{now, at.Add(-time.Millisecond), now.Add(time.Duration(rng.Int64N(int64(at.Sub(now) + 1))))}
			require.NotNil(t, popup.Select(cs, caseRequest, state, at, pace), "round %d: nothing at %v", round, at)
		}
		for _, tm := range before {
			if tm.Before(now) || !at.IsZero() && !tm.Before(at) {
				continue // outside [now, at)
			}
			require.Nil(t, popup.Select(cs, caseRequest, state, tm, pace), "round %d: a popup at %v, before %v", round, tm, at)
		}
	}
}

// TestSelectIsTheFirstWithNoReason holds Select to the eligibility rule: over random cases and
// instants, Select chooses what Explain (which reports the rule for every candidate) chooses. Both
// call reason today; the test is there for the day someone writes Select's checks out for speed.
func TestSelectIsTheFirstWithNoReason(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(51, 4))
	for round := range 300 {
		cs, state, pace := randomCase(t, rng)
		at := now.Add(time.Duration(rng.IntN(72)) * time.Hour)
		want, _ := popup.Explain(cs, caseRequest, state, at, pace)
		require.Equal(t, idOf(want), idOf(popup.Select(cs, caseRequest, state, at, pace)), "round %d", round)
	}
}
