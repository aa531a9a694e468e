package popup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	arules "popupsvc/internal/popup/rules"
)

var whereT0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func attrsOf(kv ...string) arules.Attrs {
	var ps []arules.Pair
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, arules.Pair{Key: kv[i], Value: kv[i+1]})
	}
	return arules.NewAttrs(ps)
}

func condition(attr string, op arules.Op, vs ...arules.Value) arules.Condition {
	return arules.Condition{Attr: attr, Op: op, Values: vs}
}

// TestWhereValidationNamesThePath: placements, triggers and rules are refused naming the input.
func TestWhereValidationNamesThePath(t *testing.T) {
	t.Parallel()
	ok := condition("plan", arules.OpEq, arules.Str("pro"))
	tests := []struct {
		name string
		give popup.TargetingInput
		want []popup.FieldError
	}{
		{"placement upper-case", popup.TargetingInput{Placements: []string{"home", "Checkout"}},
			[]popup.FieldError{{Field: "targeting.placements[1]", Message: "must be " + popup.PlacementRule}}},
		{"placement twice", popup.TargetingInput{Placements: []string{"cart", "home", "cart"}},
			[]popup.FieldError{{Field: "targeting.placements[2]", Message: `names placement "cart" twice`}}},
		{"trigger without an event", popup.TargetingInput{Trigger: &popup.Trigger{}},
			[]popup.FieldError{{Field: "targeting.trigger.event", Message: "must be " + popup.EventRule}}},
		{"trigger condition with an unknown operator", popup.TargetingInput{Trigger: &popup.Trigger{Event: "buy",
			Conditions: []arules.Condition{ok, condition("amount", "greater", arules.Num("3"))}}},
			[]popup.FieldError{{Field: "targeting.trigger.conditions[1].op", Message: "must be one of eq, neq, in, not_in, contains, starts_with, ends_with, matches, gt, gte, lt, lte, semver_eq, semver_gt, semver_gte, semver_lt, semver_lte, exists, not_exists"}}},
		{"rule with an unknown operator", popup.TargetingInput{Rules: []arules.Rule{{Conditions: []arules.Condition{ok}},
			{Conditions: []arules.Condition{condition("plan", "like", arules.Str("p"))}}}},
			[]popup.FieldError{{Field: "targeting.rules[1].conditions[0].op", Message: "must be one of eq, neq, in, not_in, contains, starts_with, ends_with, matches, gt, gte, lt, lte, semver_eq, semver_gt, semver_gte, semver_lt, semver_lte, exists, not_exists"}}},
		{"a type the operator cannot take", popup.TargetingInput{Rules: []arules.Rule{{Conditions: []arules.Condition{
			condition("build", arules.OpSemverGte, arules.Num("8"))}}}},
			[]popup.FieldError{{Field: "targeting.rules[0].conditions[0].value", Message: "must be a semantic version such as 8.2.0 (as a string) for semver_gte"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := input(targeting(tt.give)).BuildWith(popup.LinkSchemes{})
			assert.Equal(t, tt.want, fieldErrors(t, err))
		})
	}
}

// TestWhereDefaultsAndNormalForm: no placements and the homepage alone are the same popup (nil);
// empty rules and trigger conditions are nil.
func TestWhereDefaultsAndNormalForm(t *testing.T) {
	t.Parallel()
	for _, give := range [][]string{nil, {}, {"home"}} {
		p, err := input(targeting(popup.TargetingInput{Placements: give, Rules: []arules.Rule{},
			Trigger: &popup.Trigger{Event: "buy", Conditions: []arules.Condition{}}})).BuildWith(popup.LinkSchemes{})
		require.NoError(t, err)
		assert.Nil(t, p.Targeting.Placements, "%v", give)
		assert.Equal(t, []string{"home"}, p.Targeting.PlacementsOr())
		assert.Nil(t, p.Targeting.Rules)
		assert.Nil(t, p.Targeting.Trigger.Conditions)
	}
}

// TestMatchWhere: placement, trigger and rules in the order explain reports them, before and
// after the other targeting checks.
func TestMatchWhere(t *testing.T) {
	t.Parallel()
	pro := []arules.Rule{{Conditions: []arules.Condition{condition("plan", arules.OpIn, arules.Str("pro"), arules.Str("team"))}}}
	buy := &popup.Trigger{Event: "purchase_completed", Conditions: []arules.Condition{condition("amount", arules.OpGte, arules.Num("30"))}}
	tests := []struct {
		name string
		give popup.TargetingInput
		req  popup.Where
		want popup.Reason
	}{
		{"home popup, plain request", popup.TargetingInput{}, popup.Where{}, popup.ReasonNone},
		{"home popup, home named", popup.TargetingInput{}, popup.Where{Placement: "home"}, popup.ReasonNone},
		{"home popup, checkout request", popup.TargetingInput{}, popup.Where{Placement: "checkout"}, popup.ReasonPlacement},
		{"checkout popup, home request", popup.TargetingInput{Placements: []string{"checkout"}}, popup.Where{}, popup.ReasonPlacement},
		{"two placements", popup.TargetingInput{Placements: []string{"checkout", "home"}}, popup.Where{}, popup.ReasonNone},
		{"plain popup, event request", popup.TargetingInput{}, popup.Where{Event: "purchase_completed"}, popup.ReasonTrigger},
		{"trigger popup, plain request", popup.TargetingInput{Trigger: buy}, popup.Where{}, popup.ReasonTrigger},
		{"trigger popup, its event", popup.TargetingInput{Trigger: buy},
			popup.Where{Event: "purchase_completed", Props: attrsOf("amount", "30")}, popup.ReasonNone},
		{"trigger popup, its event, property too low", popup.TargetingInput{Trigger: buy},
			popup.Where{Event: "purchase_completed", Props: attrsOf("amount", "29.99")}, popup.ReasonTrigger},
		{"trigger popup, another event", popup.TargetingInput{Trigger: buy},
			popup.Where{Event: "level_up", Props: attrsOf("amount", "30")}, popup.ReasonTrigger},
		{"trigger without conditions: any occurrence", popup.TargetingInput{Trigger: &popup.Trigger{Event: "level_up"}},
			popup.Where{Event: "level_up"}, popup.ReasonNone},
		{"rules hold", popup.TargetingInput{Rules: pro}, popup.Where{Attrs: attrsOf("plan", "team")}, popup.ReasonNone},
		{"rules fail", popup.TargetingInput{Rules: pro}, popup.Where{Attrs: attrsOf("plan", "free")}, popup.ReasonRules},
		{"rules, attribute missing", popup.TargetingInput{Rules: pro}, popup.Where{}, popup.ReasonRules},
		{"placement before platform", popup.TargetingInput{Platforms: []string{"web"}}, popup.Where{Placement: "cart"}, popup.ReasonPlacement},
		{"rollout before rules", popup.TargetingInput{Rules: pro, RolloutPercent: ptr(0)}, popup.Where{}, popup.ReasonRollout},
		{"lang before rules", popup.TargetingInput{Rules: pro, Langs: []string{"en"}}, popup.Where{}, popup.ReasonLang},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := compiled(t, 1, targeting(tt.give))
			r := baseRequest(t)
			r.Where = tt.req
			assert.Equal(t, tt.want, c.Match(r))
			all := []*popup.Compiled{c}
			assert.Equal(t, tt.want == popup.ReasonNone, popup.AnyMatch(all, &r, whereT0))
			assert.Equal(t, tt.want == popup.ReasonNone, popup.Select(all, r, nil, whereT0, popup.Pacing{}) == c)
			_, cands := popup.Explain(all, r, nil, whereT0, popup.Pacing{})
			assert.Equal(t, tt.want, cands[0].Reason)
			if tt.want != popup.ReasonNone {
				assert.True(t, popup.NextEligibleAt(all, r, nil, whereT0, popup.Pacing{}).IsZero(), "never, for this request")
			}
		})
	}
}

// TestExplainGivesEveryRuleOutcome: each rule's outcome, the first failing condition's attribute,
// operator, value seen and why; the trigger's when the request carries its event.
func TestExplainGivesEveryRuleOutcome(t *testing.T) {
	t.Parallel()
	c := compiled(t, 1, targeting(popup.TargetingInput{
		Trigger: &popup.Trigger{Event: "buy", Conditions: []arules.Condition{condition("amount", arules.OpGt, arules.Num("10"))}},
		Rules: []arules.Rule{
			{Conditions: []arules.Condition{condition("plan", arules.OpEq, arules.Str("pro")), condition("age", arules.OpGte, arules.Num("18"))}},
			{Conditions: []arules.Condition{condition("signup", arules.OpGt, arules.Str("2026-01-01T00:00:00Z"))}},
		}}))
	r := baseRequest(t)
	r.Where = popup.Where{Event: "buy", Props: attrsOf("amount", "12"), Attrs: attrsOf("plan", "pro", "age", "old", "signup", "2026-02-01T00:00:00Z")}
	_, cands := popup.Explain([]*popup.Compiled{c}, r, nil, whereT0, popup.Pacing{})
	require.Len(t, cands, 1)
	assert.Equal(t, popup.ReasonNone, cands[0].Reason)
	assert.Equal(t, &arules.Outcome{Matched: true, Condition: -1}, cands[0].Trigger)
	assert.Equal(t, []arules.Outcome{
		{Condition: 1, Attr: "age", Op: arules.OpGte, Present: true, Seen: "old", Why: arules.WhyMistyped},
		{Matched: true, Condition: -1},
	}, cands[0].Rules)
}

// TestWhereKeepsLocalAnswersSound: whether a popup's placement, trigger or rules let it through
// depends on the request alone, never on the user's state or the time, so "nothing until T"
// (NextEligibleAt) holds for the same request as before.
func TestWhereKeepsLocalAnswersSound(t *testing.T) {
	t.Parallel()
	c := compiled(t, 1, targeting(popup.TargetingInput{Rules: []arules.Rule{{Conditions: []arules.Condition{
		condition("signup", arules.OpLt, arules.Str("2026-12-01T00:00:00Z"))}}}}))
	r := baseRequest(t)
	r.Attrs = attrsOf("signup", "2026-11-01T00:00:00Z")
	all := []*popup.Compiled{c}
	st := &popup.UserState{}
	c.ApplyImpression(st, whereT0)
	next := popup.NextEligibleAt(all, r, st, whereT0, popup.Pacing{})
	assert.Equal(t, whereT0.Add(24*time.Hour), next, "the reshow's end, as without rules")
	assert.Nil(t, popup.Select(all, r, st, next.Add(-time.Second), popup.Pacing{}))
	assert.Same(t, c, popup.Select(all, r, st, next, popup.Pacing{}))
}

// TestAnyMatchWithRules: popups with rules are looked at after the others (AnyMatch) and give
// the same answer as if they were not: rules that hold match, rules that fail do not, whatever
// comes before or after them.
func TestAnyMatchWithRules(t *testing.T) {
	t.Parallel()
	pro := targeting(popup.TargetingInput{Rules: []arules.Rule{{Conditions: []arules.Condition{
		condition("plan", arules.OpIn, arules.Str("pro"), arules.Str("team"))}}}})
	android := targeting(popup.TargetingInput{Platforms: []string{popup.PlatformAndroid}})
	tests := []struct {
		name string
		plan string
		give []spec
		want bool
	}{
		{"rules that hold", "pro", []spec{{1, 10, pro}}, true},
		{"rules that fail", "free", []spec{{1, 10, pro}}, false},
		{"rules that fail, a plain popup after", "free", []spec{{1, 50, pro}, {2, 10, nil}}, true},
		{"rules that fail, a plain popup for another platform after", "free", []spec{{1, 50, pro}, {2, 10, android}}, false},
		{"rules that hold after a plain popup for another platform", "team", []spec{{1, 50, android}, {2, 10, pro}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := baseRequest(t)
			r.Attrs = attrsOf("plan", tt.plan)
			assert.Equal(t, tt.want, popup.AnyMatch(candidates(t, tt.give...), &r, whereT0))
		})
	}
}
