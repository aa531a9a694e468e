package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"popupsvc/internal/popup/rules"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exported is an export's popups as the admin API writes them: every targeting with its
// placements and rules, bench popups, the record popup and mix popups.
const exported = `[
	{"name": "bench-0", "priority": 5, "targeting": {"regions": ["r0"], "placements": ["home"], "trigger": null, "rules": []}},
	{"name": "bench-1", "targeting": {"regions": ["r1"], "placements": ["home"], "trigger": null, "rules": []}},
	{"name": "bench-2", "targeting": {"regions": ["r2"], "placements": ["home", "checkout"], "trigger": null,
		"rules": [{"conditions": [{"attr": "plan", "op": "in", "value": ["pro", "team"]}]},
			{"conditions": [{"attr": "build", "op": "semver_gte", "value": "9.0.0"}]}]}},
	{"name": "bench-record", "targeting": {"regions": ["rec"], "placements": ["home"], "trigger": null, "rules": []}},
	{"name": "mix-10", "targeting": {"regions": ["m1"], "placements": ["home"], "trigger": null, "rules": []}},
	{"name": "mix-11", "targeting": {"regions": ["m2"], "placements": ["home"], "trigger": null, "rules": []}}
]`

func TestSetRulesEditsTheEvenPopupsOfOneKindOnly(t *testing.T) {
	withRules := json.RawMessage(`{"placements": ["home", "checkout"], "trigger": null, "rules": [
		{"conditions": [{"attr": "plan", "op": "in", "value": ["pro", "team"]}]},
		{"conditions": [{"attr": "build", "op": "semver_gte", "value": "9.0.0"}]}]}`)
	without := json.RawMessage(`{"placements": ["home"], "trigger": null, "rules": []}`)
	tests := []struct {
		name   string
		prefix string
		on     bool
		want   map[string]json.RawMessage // targeting (without regions) of each popup
		edited int
	}{
		{"on for the bench popups", "bench-", true,
			map[string]json.RawMessage{"bench-0": withRules, "bench-1": without, "bench-2": withRules, "bench-record": without, "mix-10": without, "mix-11": without}, 2},
		{"off for the bench popups", "bench-", false,
			map[string]json.RawMessage{"bench-0": without, "bench-1": without, "bench-2": without, "bench-record": without, "mix-10": without, "mix-11": without}, 2},
		{"on for the mix's popups", "mix-", true,
			map[string]json.RawMessage{"bench-0": without, "bench-1": without, "bench-2": withRules, "bench-record": without, "mix-10": withRules, "mix-11": without}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var popups []map[string]any
			require.NoError(t, json.Unmarshal([]byte(exported), &popups))

			n := setRules(popups, tt.prefix, tt.on)

			assert.Equal(t, tt.edited, n)
			for _, p := range popups {
				tg := p["targeting"].(map[string]any)
				assert.NotEmpty(t, tg["regions"], "the rest of the targeting stays")
				delete(tg, "regions")
				got, err := json.Marshal(tg)
				require.NoError(t, err)
				assert.JSONEq(t, string(tt.want[p["name"].(string)]), string(got), p["name"])
			}
			assert.Equal(t, 5.0, popups[0]["priority"], "the rest of the popup stays")
		})
	}
}

func TestAppendAttrsIsBenchLuasAttributes(t *testing.T) {
	tests := []struct {
		uid  int
		want string
	}{
		{0, "&attr.plan=pro&attr.build=9.2.0"},
		{7, "&attr.plan=free&attr.build=9.2.0"},
		{12, "&attr.plan=pro&attr.build=9.2.0"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, string(appendAttrs(nil, tt.uid)))
	}
}

// TestTheBenchTrafficPassesTheBenchRules compiles benchRules with the service's rules package and
// evaluates them for the attributes the bench's GETs carry: every user passes (a pro user by the
// plan, every user by the build), so run K's answers are the run without rules'; a GET without
// the attributes passes neither rule.
func TestTheBenchTrafficPassesTheBenchRules(t *testing.T) {
	var wire []struct {
		Conditions []struct {
			Attr, Op string
			Value    json.RawMessage
		}
	}
	require.NoError(t, json.Unmarshal([]byte(benchRules), &wire))
	var rs []rules.Rule
	for _, w := range wire {
		var r rules.Rule
		for _, c := range w.Conditions {
			vs, ok := rules.DecodeValue(c.Value)
			require.True(t, ok, string(c.Value))
			r.Conditions = append(r.Conditions, rules.Condition{Attr: c.Attr, Op: rules.Op(c.Op), Values: vs})
		}
		rs = append(rs, r)
	}
	require.Empty(t, rules.ValidateRules("targeting.rules", rs))
	set, err := rules.Compile(rs)
	require.NoError(t, err)
	attrsOf := func(query string) rules.Attrs {
		q, err := url.ParseQuery(strings.TrimPrefix(query, "&"))
		require.NoError(t, err)
		var pairs []rules.Pair
		for k, v := range q {
			pairs = append(pairs, rules.Pair{Key: strings.TrimPrefix(k, "attr."), Value: v[0]})
		}
		return rules.NewAttrs(pairs)
	}

	tests := []struct {
		name     string
		query    string
		want     bool
		outcomes []bool // each rule's
	}{
		{"a pro user (even uid)", string(appendAttrs(nil, 4)), true, []bool{true, true}},
		{"a free user (odd uid): the build's rule", string(appendAttrs(nil, 5)), true, []bool{false, true}},
		{"a GET without attributes", "", false, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := attrsOf(tt.query)

			assert.Equal(t, tt.want, set.Match(&a))
			var got []bool
			for _, o := range set.Explain(&a) {
				got = append(got, o.Matched)
			}
			assert.Equal(t, tt.outcomes, got)
		})
	}
}
