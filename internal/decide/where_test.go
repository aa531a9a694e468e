package decide_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

func attrsOf(kv ...string) rules.Attrs {
	var ps []rules.Pair
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, rules.Pair{Key: kv[i], Value: kv[i+1]})
	}
	return rules.NewAttrs(ps)
}

func withWhere(r popup.Request, w popup.Where) popup.Request {
	r.Where = w
	return r
}

// purchasePopup waits for purchase_completed with an amount of at least 30.
var purchasePopup = active(1, func(p *popup.Popup) {
	p.Targeting.Placements = []string{"checkout"}
	p.Targeting.Trigger = &popup.Trigger{Event: "purchase_completed",
		Conditions: []rules.Condition{{Attr: "amount", Op: rules.OpGte, Values: []rules.Value{rules.Num("30")}}}}
})

// TestTriggerShowsOnItsEventOnly: a trigger popup shows on a request carrying its event with
// matching properties, in its placement, and on nothing else; a plain popup of the same
// placement does not show on an event request.
func TestTriggerShowsOnItsEventOnly(t *testing.T) {
	t.Parallel()
	plain := active(2, func(p *popup.Popup) { p.Priority = 1; p.Targeting.Placements = []string{"checkout"} })
	tests := []struct {
		name string
		give popup.Where
		want int64
	}{
		{"its event, matching", popup.Where{Placement: "checkout", Event: "purchase_completed", Props: attrsOf("amount", "45.5")}, 1},
		{"its event, amount too low", popup.Where{Placement: "checkout", Event: "purchase_completed", Props: attrsOf("amount", "29")}, 0},
		{"its event, amount mistyped", popup.Where{Placement: "checkout", Event: "purchase_completed", Props: attrsOf("amount", "lots")}, 0},
		{"its event, no amount", popup.Where{Placement: "checkout", Event: "purchase_completed"}, 0},
		{"its event, another placement", popup.Where{Event: "purchase_completed", Props: attrsOf("amount", "45")}, 0},
		{"another event", popup.Where{Placement: "checkout", Event: "level_up", Props: attrsOf("amount", "45")}, 0},
		{"no event: the plain popup", popup.Where{Placement: "checkout"}, 2},
		{"the homepage", popup.Where{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1000, popup.Pacing{}, purchasePopup, plain)
			kind, id, _ := f.decide(t, withWhere(iosReq, tt.give), t0)
			assert.Equal(t, tt.want, id)
			if tt.want == 0 {
				assert.Equal(t, decide.None, kind)
			}
		})
	}
}

// TestRulesDecideAndTheLocalAnswerKeepsThemApart: a popup for pro users shows to a pro user and
// not to a free one; the "nothing" remembered for the free user does not answer the same user
// asking as pro (the key holds the value of every attribute the rules read), and an attribute
// no rule reads does not split the remembered answers.
func TestRulesDecideAndTheLocalAnswerKeepsThemApart(t *testing.T) {
	t.Parallel()
	pro := active(1, func(p *popup.Popup) {
		p.Targeting.Rules = []rules.Rule{{Conditions: []rules.Condition{{Attr: "plan", Op: rules.OpIn, Values: []rules.Value{rules.Str("pro"), rules.Str("team")}}}}}
	})
	f := newFixture(t, 1000, popup.Pacing{}, pro, hidden)
	f.store.set("u1", withHidden(popup.UserState{}))
	free := withWhere(iosReq, popup.Where{Attrs: attrsOf("plan", "free", "theme", "dark")})

	kind, _, read := f.decide(t, free, t0)
	assert.Equal(t, decide.None, kind)
	assert.True(t, read)
	kind, _, read = f.decide(t, withWhere(iosReq, popup.Where{Attrs: attrsOf("plan", "free", "theme", "light")}), t0)
	assert.Equal(t, decide.None, kind)
	assert.False(t, read, "theme is read by no rule: the remembered answer holds")

	kind, id, read := f.decide(t, withWhere(iosReq, popup.Where{Attrs: attrsOf("plan", "pro")}), t0)
	assert.True(t, read, "another plan is another key")
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(1), id)
}

// TestExplainNamesPlacementTriggerAndRules: explain says for each popup whether its placement,
// trigger or rules ruled it out, with each rule's failing condition and the value seen.
func TestExplainNamesPlacementTriggerAndRules(t *testing.T) {
	t.Parallel()
	ruled := active(3, func(p *popup.Popup) {
		p.Priority = 5
		p.Targeting.Placements = []string{"checkout"}
		p.Targeting.Rules = []rules.Rule{
			{Conditions: []rules.Condition{{Attr: "plan", Op: rules.OpEq, Values: []rules.Value{rules.Str("pro")}},
				{Attr: "build", Op: rules.OpSemverGte, Values: []rules.Value{rules.Str("8.2.0")}}}},
			{Conditions: []rules.Condition{{Attr: "email", Op: rules.OpEndsWith, Values: []rules.Value{rules.Str("@corp.com")}}}},
		}
	})
	home := active(4, func(p *popup.Popup) { p.Priority = 4 })
	f := newFixture(t, 0, popup.Pacing{}, purchasePopup, ruled, home)
	req := withWhere(iosReq, popup.Where{Placement: "checkout", Event: "purchase_completed",
		Props: attrsOf("amount", "12"), Attrs: attrsOf("plan", "pro", "build", "8.1")})
	ex, err := f.d.Explain(context.Background(), req, t0, decide.ExplainOptions{})
	require.NoError(t, err)
	assert.Equal(t, "checkout", ex.Placement)
	assert.Equal(t, "purchase_completed", ex.Event)
	assert.Nil(t, ex.Chosen)
	byID := map[int64]popup.Candidate{}
	for _, c := range ex.Candidates {
		byID[c.ID] = c
	}
	assert.Equal(t, popup.ReasonTrigger, byID[1].Reason)
	assert.Equal(t, &rules.Outcome{Condition: 0, Attr: "amount", Op: rules.OpGte, Present: true, Seen: "12", Why: rules.WhyFalse}, byID[1].Trigger)
	assert.Equal(t, popup.ReasonTrigger, byID[3].Reason, "an event request is not for a popup without a trigger")
	assert.Equal(t, []rules.Outcome{
		{Condition: 1, Attr: "build", Op: rules.OpSemverGte, Present: true, Seen: "8.1", Why: rules.WhyFalse},
		{Condition: 0, Attr: "email", Op: rules.OpEndsWith, Why: rules.WhyMissing},
	}, byID[3].Rules, "each rule's outcome, whatever ruled the popup out first")
	assert.Equal(t, popup.ReasonPlacement, byID[4].Reason)

	// the same user on a plain checkout request with a corp email: the second rule holds
	plain := withWhere(iosReq, popup.Where{Placement: "checkout", Attrs: attrsOf("email", "ann@corp.com")})
	ex, err = f.d.Explain(context.Background(), plain, t0.Add(time.Second), decide.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Chosen)
	assert.Equal(t, int64(3), ex.Chosen.Popup.ID)
	assert.Equal(t, int64(3), ex.ShownID)
}
