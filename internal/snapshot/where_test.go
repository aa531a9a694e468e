package snapshot

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

func wherePopup(t testing.TB, id int64, prio int, tg popup.TargetingInput) popup.Popup {
	t.Helper()
	p, err := popup.Input{Name: "p" + strconv.FormatInt(id, 10), Priority: &prio, Targeting: &tg}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	p.ID = id
	return p
}

func ids(cs []*popup.Compiled) []int64 {
	out := []int64{}
	for _, c := range cs {
		out = append(out, c.Popup.ID)
	}
	return out
}

// TestCandidatesByPlacementAndEvent: a request sees only the popups of its placement, those
// without a trigger when it carries no event, those waiting for its event when it carries one;
// a placement or event nobody lists has no candidates.
func TestCandidatesByPlacementAndEvent(t *testing.T) {
	t.Parallel()
	s := BuildWith(1, []popup.Popup{
		wherePopup(t, 1, 9, popup.TargetingInput{}), // the homepage, as before placements
		wherePopup(t, 2, 8, popup.TargetingInput{Placements: []string{"checkout"}}),
		wherePopup(t, 3, 7, popup.TargetingInput{Placements: []string{"home", "checkout"}}),
		wherePopup(t, 4, 6, popup.TargetingInput{Placements: []string{"checkout"}, Trigger: &popup.Trigger{Event: "purchase_completed"}}),
		wherePopup(t, 5, 5, popup.TargetingInput{Trigger: &popup.Trigger{Event: "level_up"}}),
	}, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)
	tests := []struct {
		give popup.Where
		want []int64
	}{
		{popup.Where{}, []int64{1, 3}},
		{popup.Where{Placement: "home"}, []int64{1, 3}},
		{popup.Where{Placement: "checkout"}, []int64{2, 3}},
		{popup.Where{Placement: "checkout", Event: "purchase_completed"}, []int64{4}},
		{popup.Where{Event: "purchase_completed"}, []int64{}},
		{popup.Where{Event: "level_up"}, []int64{5}},
		{popup.Where{Placement: "settings"}, []int64{}},
		{popup.Where{Placement: "settings", Event: "level_up"}, []int64{}},
	}
	for _, tt := range tests {
		req := popup.Request{UID: "u1", Platform: "ios", Where: tt.give}
		assert.Equal(t, tt.want, ids(s.Candidates(&req)), "%+v", tt.give)
	}
	assert.Equal(t, []string{"checkout", "home"}, s.Placements())
}

// TestCheckoutPopupNeverOnHome: a popup listing only checkout is never chosen for the homepage,
// from the index or from every active popup, and Explain says why.
func TestCheckoutPopupNeverOnHome(t *testing.T) {
	t.Parallel()
	s := BuildWith(1, []popup.Popup{wherePopup(t, 1, 0, popup.TargetingInput{Placements: []string{"checkout"}})}, t0, popup.LinkSchemes{}, nil)
	home := popup.Request{UID: "u1", Platform: "ios"}
	assert.Nil(t, popup.Select(s.Candidates(&home), home, nil, t0, popup.Pacing{}))
	assert.Nil(t, popup.Select(s.Ordered, home, nil, t0, popup.Pacing{}))
	assert.False(t, popup.AnyMatch(s.Ordered, &home, t0))
	_, cands := popup.Explain(s.Ordered, home, nil, t0, popup.Pacing{})
	require.Len(t, cands, 1)
	assert.Equal(t, popup.ReasonPlacement, cands[0].Reason)

	checkout := home
	checkout.Placement = "checkout"
	assert.NotNil(t, popup.Select(s.Candidates(&checkout), checkout, nil, t0, popup.Pacing{}))
}

// TestRuleKeysOfAPlacement: the attribute keys a placement's plain popups' rules read.
func TestRuleKeysOfAPlacement(t *testing.T) {
	t.Parallel()
	rule := func(attr string) []rules.Rule {
		return []rules.Rule{{Conditions: []rules.Condition{{Attr: attr, Op: rules.OpExists}}}}
	}
	s := BuildWith(1, []popup.Popup{
		wherePopup(t, 1, 0, popup.TargetingInput{Rules: rule("plan")}),
		wherePopup(t, 2, 0, popup.TargetingInput{Rules: rule("country"), Placements: []string{"home", "cart"}}),
		wherePopup(t, 3, 0, popup.TargetingInput{Rules: rule("tier"), Trigger: &popup.Trigger{Event: "e"}}),
	}, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)
	assert.Equal(t, []string{"country", "plan"}, s.RuleKeys(""))
	assert.Equal(t, []string{"country"}, s.RuleKeys("cart"))
	assert.Nil(t, s.RuleKeys("nowhere"))
}

// BenchmarkBuildPlacements builds the snapshot of 10,000 popups over 200 placements, half of them
// with two rules and a quarter with a trigger: the target is 1 s (docs/PERFORMANCE.md,
// "Rules").
func BenchmarkBuildPlacements(b *testing.B) {
	popups := placementPopups(b, 10000, 200)
	b.ReportAllocs()
	for b.Loop() {
		s := BuildWith(1, popups, t0, popup.LinkSchemes{}, nil)
		if len(s.Problems) > 0 {
			b.Fatal(s.Problems[0])
		}
	}
}

func placementPopups(b testing.TB, n, places int) []popup.Popup {
	regions := []string{"cn", "us", "de", "jp", "br", "in", "fr", "gb"}
	pls := []string{"ios", "android", "web"}
	out := make([]popup.Popup, 0, n)
	for i := 1; i <= n; i++ {
		tg := popup.TargetingInput{Platforms: []string{pls[i%3]}, Regions: []string{regions[i%8]},
			MinAppVersion: "8." + strconv.Itoa(i%12) + ".0", Placements: []string{"place-" + strconv.Itoa(i%places)}}
		if i%2 == 0 {
			tg.Rules = []rules.Rule{
				{Conditions: []rules.Condition{{Attr: "plan", Op: rules.OpIn, Values: []rules.Value{rules.Str("pro"), rules.Str("team")}},
					{Attr: "build", Op: rules.OpSemverGte, Values: []rules.Value{rules.Str("8.2.0")}}}},
				{Conditions: []rules.Condition{{Attr: "email", Op: rules.OpMatches, Values: []rules.Value{rules.Str(`@corp\.com$`)}}}},
			}
		}
		if i%4 == 1 {
			tg.Trigger = &popup.Trigger{Event: "event-" + strconv.Itoa(i%10),
				Conditions: []rules.Condition{{Attr: "amount", Op: rules.OpGte, Values: []rules.Value{rules.Num("30")}}}}
		}
		out = append(out, wherePopup(b, int64(i), i%100, tg))
	}
	return out
}

// TestMembershipsDescribeThePlacementsAudienceChecks: for each audience the plain popups of a
// placement target (those that have ended too, not those waiting for an event), whether it is
// held and whether the uid is a member; a placement with more audiences than fit describes none.
func TestMembershipsDescribeThePlacementsAudienceChecks(t *testing.T) {
	t.Parallel()
	ended := t0.Add(-time.Hour)
	aud := func(in, ex []int64) popup.TargetingInput {
		return popup.TargetingInput{Audiences: popup.AudienceRefs{Include: in, Exclude: ex}}
	}
	over := wherePopup(t, 5, 1, popup.TargetingInput{Placements: []string{"crowded"}})
	for id := int64(100); id < 100+MaxMembershipAudiences+1; id++ { // 20 included at most
		refs := &over.Targeting.Audiences
		if len(refs.Include) < 20 {
			refs.Include = append(refs.Include, id)
		} else {
			refs.Exclude = append(refs.Exclude, id)
		}
	}
	old := wherePopup(t, 4, 1, aud([]int64{50}, nil))
	old.EndAt = &ended
	trig := aud([]int64{40}, nil)
	trig.Trigger = &popup.Trigger{Event: "level_up"}
	checkout := aud([]int64{20}, nil)
	checkout.Placements = []string{"checkout"}
	key := audience.Key{7}
	set := func(id int64, uids ...string) *audience.Set {
		var fps []uint64
		for _, u := range uids {
			fps = append(fps, audience.Fingerprint(key, u))
		}
		s, err := audience.NewSet(id, 1, key, audience.SortUnique(fps))
		require.NoError(t, err)
		return s
	}
	sets := audience.NewSets(1, map[int64]*audience.Set{10: set(10, "u1"), 20: set(20, "u2"), 30: set(30, "u2"), 40: set(40, "u1")}, nil)
	s := BuildWith(1, []popup.Popup{
		wherePopup(t, 1, 9, aud([]int64{10}, []int64{30})), // home: 10 and 30
		wherePopup(t, 2, 8, checkout),
		wherePopup(t, 3, 7, trig),
		old, // home, ended: 50, not held
		over,
	}, t0, popup.LinkSchemes{}, sets)
	require.Empty(t, s.Problems)
	const held, member = 1, 2
	tests := []struct {
		placement, uid string
		want           uint64
		wantOK         bool
	}{
		{"", "u1", held | member | held<<2, true}, // home's 10, 30, 50
		{popup.DefaultPlacement, "u2", held | (held|member)<<2, true},
		{"home", "u3", held | held<<2, true},
		{"checkout", "u1", held, true},
		{"checkout", "u2", held | member, true},
		{"nowhere", "u1", 0, true},
		{"crowded", "u1", 0, false},
	}
	for _, tt := range tests {
		got, ok := s.Memberships(tt.placement, tt.uid)
		assert.Equal(t, tt.wantOK, ok, "%s %s", tt.placement, tt.uid)
		assert.Equal(t, tt.want, got, "%s %s", tt.placement, tt.uid)
	}
}
