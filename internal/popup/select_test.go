package popup_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// spec describes one candidate popup of a selection test.
type spec struct {
	id       int64
	priority int
	mod      func(*popup.Input) // nil: no further changes
}

func candidates(t testing.TB, specs ...spec) []*popup.Compiled {
	t.Helper()
	cs := make([]*popup.Compiled, len(specs))
	for i, s := range specs {
		cs[i] = compiled(t, s.id, func(in *popup.Input) {
			in.Priority = ptr(s.priority)
			in.ReshowAfterSeconds = ptr[int64](3600)
			orDefault(s.mod, noChange)(in)
		})
	}
	popup.SortForSelection(cs)
	return cs
}

func ids(cs []*popup.Compiled) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.Popup.ID
	}
	return out
}

// idOf is the chosen popup's id, 0 for none.
func idOf(c *popup.Compiled) int64 {
	if c == nil {
		return 0
	}
	return c.Popup.ID
}

func userState(popups map[int64]popup.PopupState) *popup.UserState {
	return &popup.UserState{Popups: popup.StatesOf(popups)}
}

func status(s popup.Status) func(*popup.Input) {
	return func(in *popup.Input) { in.Status = &s }
}

func window(start, end time.Time) func(*popup.Input) {
	return func(in *popup.Input) { in.StartAt, in.EndAt = &start, &end }
}

func TestSortForSelection(t *testing.T) {
	t.Parallel()
	cs := candidates(t, spec{id: 4, priority: 10}, spec{id: 9, priority: 100}, spec{id: 2, priority: 10},
		spec{id: 7, priority: -1}, spec{id: 1, priority: 50}, spec{id: 3, priority: 10})

	assert.Equal(t, []int64{9, 1, 2, 3, 4, 7}, ids(cs))
}

func TestSelect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		specs    []spec
		state    *popup.UserState
		dailyCap int
		want     int64 // 0 = no popup
	}{
		{name: "highest priority wins", specs: []spec{{1, 10, nil}, {2, 50, nil}, {3, 30, nil}}, want: 2},
		{name: "equal priority goes to the lower id", specs: []spec{{5, 10, nil}, {3, 10, nil}, {4, 10, nil}}, want: 3},
		{name: "no candidates", want: 0},
		{name: "nil state", specs: []spec{{1, 10, nil}}, state: nil, want: 1},
		{
			name:  "a popup inside its reshow interval falls through",
			specs: []spec{{1, 50, nil}, {2, 10, nil}},
			state: userState(map[int64]popup.PopupState{1: seen(now.Add(-time.Minute), now.Add(59*time.Minute))}),
			want:  2,
		},
		{
			name:  "a popup is back at its next show time",
			specs: []spec{{1, 50, nil}, {2, 10, nil}},
			state: userState(map[int64]popup.PopupState{1: seen(now.Add(-time.Hour), now)}),
			want:  1,
		},
		{
			name:  "a clicked never-again popup falls through years later",
			specs: []spec{{1, 50, rules(3600, -1, 3600, 0)}, {2, 10, nil}},
			state: userState(map[int64]popup.PopupState{1: clicked(now.Add(-5*year), popup.Forever)}),
			want:  2,
		},
		{
			name:  "a closed popup falls through",
			specs: []spec{{1, 50, rules(3600, 0, 86400, 0)}, {2, 10, nil}},
			state: userState(map[int64]popup.PopupState{1: closed(now.Add(-time.Hour), now.Add(23*time.Hour))}),
			want:  2,
		},
		{
			name:  "a popup at max impressions falls through",
			specs: []spec{{1, 50, rules(3600, 0, 3600, 2)}, {2, 10, nil}},
			state: userState(map[int64]popup.PopupState{1: {Impressions: 2, NextShowAt: now.Add(-day)}}),
			want:  2,
		},
		{
			name:  "every popup cooling down",
			specs: []spec{{1, 50, nil}, {2, 10, nil}},
			state: userState(map[int64]popup.PopupState{1: seen(now, now.Add(time.Hour)), 2: seen(now, now.Add(time.Hour))}),
			want:  0,
		},
		{
			name:     "daily cap reached",
			specs:    []spec{{1, 50, nil}},
			state:    &popup.UserState{Day: popup.DayNumber(now), DayCount: 3},
			dailyCap: 3,
			want:     0,
		},
		{
			name:     "daily cap not yet reached",
			specs:    []spec{{1, 50, nil}},
			state:    &popup.UserState{Day: popup.DayNumber(now), DayCount: 2},
			dailyCap: 3,
			want:     1,
		},
		{name: "paused popup skipped", specs: []spec{{1, 50, status(popup.StatusPaused)}, {2, 10, nil}}, want: 2},
		{name: "draft popup skipped", specs: []spec{{1, 50, status(popup.StatusDraft)}, {2, 10, nil}}, want: 2},
		{name: "archived popup skipped", specs: []spec{{1, 50, status(popup.StatusArchived)}, {2, 10, nil}}, want: 2},
		{name: "popup not started skipped", specs: []spec{{1, 50, window(now.Add(time.Nanosecond), now.Add(day))}, {2, 10, nil}}, want: 2},
		{name: "popup starting now chosen", specs: []spec{{1, 50, window(now, now.Add(day))}, {2, 10, nil}}, want: 1},
		{name: "popup ending now skipped", specs: []spec{{1, 50, window(now.Add(-day), now)}, {2, 10, nil}}, want: 2},
		{
			name:  "popup for another platform skipped",
			specs: []spec{{1, 50, targeting(popup.TargetingInput{Platforms: []string{"android"}})}, {2, 10, nil}},
			want:  2,
		},
		{
			name:  "popup outside rollout skipped",
			specs: []spec{{1, 50, targeting(popup.TargetingInput{RolloutPercent: ptr(0)})}, {2, 10, nil}},
			want:  2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := candidates(t, tt.specs...)

			got := popup.Select(cs, baseRequest(t), tt.state, now, popup.Pacing{DailyCap: tt.dailyCap})

			assert.Equal(t, tt.want, idOf(got))
		})
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	// Priority 100-id keeps the candidates in id order, so each row reads top to bottom.
	everyReason := []spec{
		{1, 99, status(popup.StatusPaused)},
		{2, 98, window(now.Add(time.Hour), now.Add(day))},
		{3, 97, window(now.Add(-day), now)},
		{4, 96, targeting(popup.TargetingInput{Platforms: []string{"android"}})},
		{5, 95, targeting(popup.TargetingInput{MinAppVersion: "9"})},
		{6, 94, targeting(popup.TargetingInput{Regions: []string{"us"}})},
		{7, 93, targeting(popup.TargetingInput{Langs: []string{"en"}})},
		{8, 92, targeting(popup.TargetingInput{RolloutPercent: ptr(0)})},
		{9, 91, nil},
		{10, 90, rules(3600, 86400, 3600, 0)},
		{11, 89, rules(3600, 0, 86400, 0)},
		{12, 88, rules(3600, 0, 3600, 1)},
		{13, 87, nil},
		{14, 86, nil},
	}
	cooling := userState(map[int64]popup.PopupState{
		9:  seen(now.Add(-time.Minute), now.Add(59*time.Minute)),
		10: clicked(now.Add(-time.Hour), now.Add(23*time.Hour)),
		11: closed(now.Add(-time.Hour), now.Add(23*time.Hour)),
		12: {Impressions: 1, NextShowAt: now.Add(-day), LastImpressionAt: now.Add(-2 * day)},
	})
	capped := &popup.UserState{Day: popup.DayNumber(now), DayCount: 1}

	tests := []struct {
		name       string
		specs      []spec
		state      *popup.UserState
		dailyCap   int
		wantChosen int64
		want       []popup.Candidate
	}{
		{
			name: "every reason", specs: everyReason, state: cooling, dailyCap: 5, wantChosen: 13,
			want: []popup.Candidate{
				{ID: 1, Name: "winter sale", Priority: 99, Reason: popup.ReasonNotActive},
				{ID: 2, Name: "winter sale", Priority: 98, Reason: popup.ReasonNotStarted},
				{ID: 3, Name: "winter sale", Priority: 97, Reason: popup.ReasonEnded},
				{ID: 4, Name: "winter sale", Priority: 96, Reason: popup.ReasonPlatform},
				{ID: 5, Name: "winter sale", Priority: 95, Reason: popup.ReasonAppVersion},
				{ID: 6, Name: "winter sale", Priority: 94, Reason: popup.ReasonRegion},
				{ID: 7, Name: "winter sale", Priority: 93, Reason: popup.ReasonLang},
				{ID: 8, Name: "winter sale", Priority: 92, Reason: popup.ReasonRollout},
				{ID: 9, Name: "winter sale", Priority: 91, Reason: popup.ReasonReshow},
				{ID: 10, Name: "winter sale", Priority: 90, Reason: popup.ReasonClickCooldown},
				{ID: 11, Name: "winter sale", Priority: 89, Reason: popup.ReasonCloseCooldown},
				{ID: 12, Name: "winter sale", Priority: 88, Reason: popup.ReasonMaxImpressions},
				{ID: 13, Name: "winter sale", Priority: 87, Eligible: true},
				{ID: 14, Name: "winter sale", Priority: 86, Reason: popup.ReasonLowerPriority},
			},
		},
		{
			name: "daily cap hides every popup that passes targeting", specs: everyReason[7:9], state: capped, dailyCap: 1, wantChosen: 0,
			want: []popup.Candidate{
				{ID: 8, Name: "winter sale", Priority: 92, Reason: popup.ReasonRollout},
				{ID: 9, Name: "winter sale", Priority: 91, Reason: popup.ReasonDailyCap},
			},
		},
		{
			name: "nothing to explain", wantChosen: 0, want: []popup.Candidate{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := candidates(t, tt.specs...)

			chosen, got := popup.Explain(cs, baseRequest(t), tt.state, now, popup.Pacing{DailyCap: tt.dailyCap})

			assert.Equal(t, tt.wantChosen, idOf(chosen))
			assert.Equal(t, tt.want, got)
			assert.Same(t, popup.Select(cs, baseRequest(t), tt.state, now, popup.Pacing{DailyCap: tt.dailyCap}), chosen, "Explain must agree with Select")
		})
	}
}

var (
	sinkCompiled *popup.Compiled
	sinkInt      int
	sinkVersion  popup.Version
	sinkReason   popup.Reason
	sinkBool     bool
)

func TestHotPathDoesNotAllocate(t *testing.T) {
	// Candidates that exercise every check: case-folded lists, the allow-list, the rollout hash,
	// the state map and each display rule.
	cs := candidates(t,
		spec{1, 90, targeting(popup.TargetingInput{Platforms: []string{"android"}})},
		spec{2, 80, targeting(popup.TargetingInput{MinAppVersion: "8.9", MaxAppVersion: "8.10.5", Regions: []string{"US", "Cn"}, Langs: []string{"ZH"}})},
		spec{3, 70, targeting(popup.TargetingInput{RolloutPercent: ptr(1), UIDs: []string{"qa-1", "qa-2"}})},
		spec{4, 60, rules(3600, 86400, 3600, 0)},
		spec{5, 50, rules(3600, 0, 3600, 2)},
		spec{6, 40, window(now.Add(-day), now.Add(day))},
	)
	state := userState(map[int64]popup.PopupState{
		2: seen(now, now.Add(time.Hour)),
		4: clicked(now, now.Add(day)),
		5: {Impressions: 2},
	})
	req := popup.Request{UID: "user-123456", Platform: "IOS", AppVersion: mustVersion(t, "8.10.0"), Region: "cn", Lang: "zh"}

	tests := []struct {
		name string
		give func()
	}{
		{name: "Select", give: func() { sinkCompiled = popup.Select(cs, req, state, now, popup.Pacing{DailyCap: 3}) }},
		{name: "Select with nil state", give: func() { sinkCompiled = popup.Select(cs, req, nil, now, popup.Pacing{DailyCap: 3}) }},
		{name: "Match", give: func() { sinkReason = cs[1].Match(req) }},
		{name: "AnyMatch", give: func() { sinkBool = popup.AnyMatch(cs, &req, now) }},
		{name: "Eligible", give: func() { sinkReason = cs[3].Eligible(state, now, popup.Pacing{DailyCap: 3}) }},
		{name: "RolloutBucket", give: func() { sinkInt = popup.RolloutBucket("1234567", "user-123456") }},
		{name: "ParseVersion", give: func() { sinkVersion, _ = popup.ParseVersion("8.10.0.1") }},
		{name: "ParseVersion error", give: func() { sinkVersion, _ = popup.ParseVersion("8.x") }},
		{name: "ValidUID", give: func() { sinkBool = popup.ValidUID("user-123456") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Zero(t, testing.AllocsPerRun(100, tt.give))
		})
	}
}

// benchTargeting gives config i of the 10k benchmark a targeting that, for the benchmark request
// (iOS 8.10.0, cn, zh, uid user-123456), mostly fails at one check or another.
func benchTargeting(i int) func(*popup.Input) {
	tg := []popup.TargetingInput{
		{Platforms: []string{"android"}},
		{Platforms: []string{"ios", "web"}, MinAppVersion: "9.0"},
		{Regions: []string{"us", "jp", "kr", "de"}},
		{Platforms: []string{"ios"}, Regions: []string{"cn"}, Langs: []string{"en", "fr"}},
		{RolloutPercent: ptr(0), UIDs: []string{"qa-" + strconv.Itoa(i), "qa-device-2"}},
		{MaxAppVersion: "8.9.99"},
	}[i%6]
	return func(in *popup.Input) { in.Targeting = &tg }
}

func benchSetup(b *testing.B) ([]*popup.Compiled, popup.Request, *popup.UserState) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	state := &popup.UserState{Day: popup.DayNumber(now), DayCount: 1}
	specs := make([]spec, 0, 10000)
	for i := range 9999 {
		id := int64(i + 1)
		mod := benchTargeting(i)
		if i%1000 == 999 { // one in a thousand matches but is cooling down for this user
			mod = noChange
			state.Popups.Set(id, seen(now.Add(-time.Minute), now.Add(time.Hour)))
		}
		specs = append(specs, spec{id: id, priority: 1 + rng.IntN(1000), mod: mod})
	}
	specs = append(specs, spec{id: 10000, priority: 0}) // the only one left: last in order
	cs := candidates(b, specs...)
	req := popup.Request{UID: "user-123456", Platform: "ios", AppVersion: popup.Version{8, 10}, Region: "cn", Lang: "zh"}
	return cs, req, state
}

func BenchmarkSelect10k(b *testing.B) {
	cs, req, state := benchSetup(b)
	if got := popup.Select(cs, req, state, now, popup.Pacing{DailyCap: 3}); idOf(got) != 10000 {
		b.Fatalf("Select chose %d, want 10000", idOf(got))
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkCompiled = popup.Select(cs, req, state, now, popup.Pacing{DailyCap: 3})
	}
}

func BenchmarkRolloutBucket(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkInt = popup.RolloutBucket("1234567", "user-123456")
	}
}

func BenchmarkParseVersion(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkVersion, _ = popup.ParseVersion("8.10.0")
	}
}

// TestAnyMatch checks the no-I/O pre-check: true exactly when some popup is active, in its window
// and targets the request, whatever the user has seen.
func TestAnyMatch(t *testing.T) {
	t.Parallel()
	req := popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us"}
	tests := []struct {
		name string
		give []spec
		want bool
	}{
		{name: "none", give: nil, want: false},
		{name: "one that matches", give: []spec{{1, 10, nil}}, want: true},
		{name: "other region only", give: []spec{{1, 10, targeting(popup.TargetingInput{Regions: []string{"cn"}})}}, want: false},
		{name: "not started", give: []spec{{1, 10, window(now.Add(time.Hour), now.Add(day))}}, want: false},
		{name: "ended", give: []spec{{1, 10, window(now.Add(-day), now.Add(-time.Hour))}}, want: false},
		{name: "paused", give: []spec{{1, 10, status(popup.StatusPaused)}}, want: false},
		{name: "a later one matches", give: []spec{
			{1, 50, targeting(popup.TargetingInput{Platforms: []string{popup.PlatformAndroid}})},
			{2, 10, nil},
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, popup.AnyMatch(candidates(t, tt.give...), &req, now))
		})
	}
}

// TestAnyMatchWithAudiences: popups that target audiences are looked at after the others, and
// give the same answer as if they were not: a member matches, a stranger does not, an audience
// not held does not (fail-closed).
func TestAnyMatchWithAudiences(t *testing.T) {
	t.Parallel()
	key := audience.Key{1}
	set, err := audience.NewSet(1, 1, key, []uint64{audience.Fingerprint(key, "member")})
	require.NoError(t, err)
	sets := audience.NewSets(1, map[int64]*audience.Set{1: set}, nil)
	include := func(id int64) func(*popup.Input) {
		return targeting(popup.TargetingInput{Audiences: popup.AudienceRefs{Include: []int64{id}}})
	}
	tests := []struct {
		name string
		uid  string
		give []spec
		want bool
	}{
		{name: "a member", uid: "member", give: []spec{{1, 10, include(1)}}, want: true},
		{name: "a stranger", uid: "stranger", give: []spec{{1, 10, include(1)}}, want: false},
		{name: "an audience not held", uid: "member", give: []spec{{1, 10, include(2)}}, want: false},
		{name: "a stranger, a popup for everyone after", uid: "stranger", give: []spec{{1, 50, include(1)}, {2, 10, nil}}, want: true},
		{name: "a member, a popup for another platform before", uid: "member", give: []spec{
			{1, 50, targeting(popup.TargetingInput{Platforms: []string{popup.PlatformAndroid}})},
			{2, 10, include(1)},
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := candidates(t, tt.give...)
			for _, c := range cs {
				c.BindAudiences(sets)
			}
			req := popup.Request{UID: tt.uid, Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}}
			assert.Equal(t, tt.want, popup.AnyMatch(cs, &req, now))
		})
	}
}
