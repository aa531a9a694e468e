package rules

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func condOf(attr string, op Op, vs ...Value) Condition {
	return Condition{Attr: attr, Op: op, Values: vs}
}

func attrs(kv ...string) Attrs {
	ps := make([]Pair, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, Pair{kv[i], kv[i+1]})
	}
	return NewAttrs(ps)
}

// TestEveryOperator: each operator on a matching value, a failing one, a mistyped one and a
// missing attribute. A missing or mistyped attribute is false for every operator but
// not_exists, and the outcome says which.
func TestEveryOperator(t *testing.T) {
	t.Parallel()
	date := Str("2026-01-01T00:00:00Z")
	tests := []struct {
		name string
		give Condition
		attr string // "<missing>" for none
		want Why
	}{
		{"eq string", condOf("plan", OpEq, Str("pro")), "pro", held},
		{"eq string is case-sensitive", condOf("plan", OpEq, Str("pro")), "Pro", WhyFalse},
		{"eq string missing", condOf("plan", OpEq, Str("pro")), "<missing>", WhyMissing},
		{"eq number", condOf("age", OpEq, Num("30")), "30.0", held},
		{"eq number other", condOf("age", OpEq, Num("30")), "31", WhyFalse},
		{"eq number mistyped", condOf("age", OpEq, Num("30")), "thirty", WhyMistyped},
		{"eq bool", condOf("beta", OpEq, Boolean(true)), "true", held},
		{"eq bool other", condOf("beta", OpEq, Boolean(true)), "false", WhyFalse},
		{"eq bool mistyped", condOf("beta", OpEq, Boolean(true)), "yes", WhyMistyped},
		{"neq string", condOf("plan", OpNeq, Str("free")), "pro", held},
		{"neq string equal", condOf("plan", OpNeq, Str("free")), "free", WhyFalse},
		{"neq missing is false", condOf("plan", OpNeq, Str("free")), "<missing>", WhyMissing},
		{"neq number mistyped", condOf("age", OpNeq, Num("3")), "x", WhyMistyped},
		{"in strings", condOf("plan", OpIn, Str("pro"), Str("team")), "team", held},
		{"in strings other", condOf("plan", OpIn, Str("pro"), Str("team")), "free", WhyFalse},
		{"in missing", condOf("plan", OpIn, Str("pro")), "<missing>", WhyMissing},
		{"in a long list (a set)", condOf("c", OpIn, Str("a"), Str("b"), Str("c"), Str("d"), Str("e"), Num("6")), "e", held},
		{"in a long list, not there", condOf("c", OpIn, Str("a"), Str("b"), Str("c"), Str("d"), Str("e"), Num("6")), "f", WhyFalse},
		{"in a long list, its number", condOf("c", OpIn, Str("a"), Str("b"), Str("c"), Str("d"), Str("e"), Num("6")), "6.0", held},
		{"not_in a long list", condOf("c", OpNotIn, Str("a"), Str("b"), Str("c"), Str("d"), Str("e")), "e", WhyFalse},
		{"in numbers", condOf("tier", OpIn, Num("1"), Num("2")), "2", held},
		{"in numbers mistyped", condOf("tier", OpIn, Num("1"), Num("2")), "two", WhyMistyped},
		{"in bools", condOf("beta", OpIn, Boolean(true)), "true", held},
		{"in mixed reads the string", condOf("x", OpIn, Num("1"), Str("one")), "one", held},
		{"not_in", condOf("country", OpNotIn, Str("cn"), Str("ru")), "us", held},
		{"not_in member", condOf("country", OpNotIn, Str("cn"), Str("ru")), "cn", WhyFalse},
		{"not_in missing is false", condOf("country", OpNotIn, Str("cn")), "<missing>", WhyMissing},
		{"not_in numbers mistyped", condOf("tier", OpNotIn, Num("1")), "x", WhyMistyped},
		{"contains", condOf("email", OpContains, Str("@corp")), "a@corp.com", held},
		{"contains not", condOf("email", OpContains, Str("@corp")), "a@home.com", WhyFalse},
		{"contains missing", condOf("email", OpContains, Str("@corp")), "<missing>", WhyMissing},
		{"starts_with", condOf("path", OpStartsWith, Str("/shop")), "/shop/1", held},
		{"starts_with not", condOf("path", OpStartsWith, Str("/shop")), "/home", WhyFalse},
		{"ends_with", condOf("email", OpEndsWith, Str("@corp.com")), "a@corp.com", held},
		{"ends_with not", condOf("email", OpEndsWith, Str("@corp.com")), "a@corp.com.evil", WhyFalse},
		{"matches", condOf("email", OpMatches, Str(`^[a-z]+@corp\.com$`)), "ann@corp.com", held},
		{"matches not", condOf("email", OpMatches, Str(`^[a-z]+@corp\.com$`)), "Ann@corp.com", WhyFalse},
		{"matches missing", condOf("email", OpMatches, Str(`.*`)), "<missing>", WhyMissing},
		{"gt number", condOf("spent", OpGt, Num("100")), "100.5", held},
		{"gt number equal", condOf("spent", OpGt, Num("100")), "100", WhyFalse},
		{"gt number mistyped", condOf("spent", OpGt, Num("100")), "lots", WhyMistyped},
		{"gte number", condOf("spent", OpGte, Num("100")), "100", held},
		{"lt number", condOf("spent", OpLt, Num("-1.5")), "-2", held},
		{"lt number not", condOf("spent", OpLt, Num("-1.5")), "0", WhyFalse},
		{"lte number", condOf("spent", OpLte, Num("1e3")), "1000", held},
		{"gt date", condOf("signup", OpGt, date), "2026-03-01T10:00:00+02:00", held},
		{"gt date before", condOf("signup", OpGt, date), "2025-12-31T23:59:59Z", WhyFalse},
		{"gt date in another zone", condOf("signup", OpGt, date), "2025-12-31T23:30:00-01:00", held},
		{"gte date equal", condOf("signup", OpGte, date), "2026-01-01T00:00:00Z", held},
		{"lt date", condOf("signup", OpLt, date), "2025-06-01T00:00:00.5Z", held},
		{"lte date after", condOf("signup", OpLte, date), "2026-01-01T00:00:00.001Z", WhyFalse},
		{"gt date mistyped", condOf("signup", OpGt, date), "2026-01-01", WhyMistyped},
		{"gt date missing", condOf("signup", OpGt, date), "<missing>", WhyMissing},
		{"semver_eq", condOf("build", OpSemverEq, Str("8.2.0")), "8.2", held},
		{"semver_gt", condOf("build", OpSemverGt, Str("8.2.0")), "8.10.0", held},
		{"semver_gt not", condOf("build", OpSemverGt, Str("8.2.0")), "8.2.0", WhyFalse},
		{"semver_gte pre-release is lower", condOf("build", OpSemverGte, Str("8.2.0")), "8.2.0-rc.1", WhyFalse},
		{"semver_gte build ignored", condOf("build", OpSemverGte, Str("8.2.0")), "8.2.0+5", held},
		{"semver_lt", condOf("build", OpSemverLt, Str("8.2.0")), "8.1.9", held},
		{"semver_lte", condOf("build", OpSemverLte, Str("8.2.0-beta.2")), "8.2.0-beta.1", held},
		{"semver mistyped", condOf("build", OpSemverGte, Str("8.2.0")), "8.x", WhyMistyped},
		{"semver missing", condOf("build", OpSemverGte, Str("8.2.0")), "<missing>", WhyMissing},
		{"exists", condOf("plan", OpExists), "", held},
		{"exists missing", condOf("plan", OpExists), "<missing>", WhyMissing},
		{"not_exists", condOf("plan", OpNotExists), "<missing>", held},
		{"not_exists present", condOf("plan", OpNotExists), "pro", WhyFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Empty(t, ValidateRules("rules", []Rule{{Conditions: []Condition{tt.give}}}))
			s, err := Compile([]Rule{{Conditions: []Condition{tt.give}}})
			require.NoError(t, err)
			a := attrs("other", "x")
			if tt.attr != "<missing>" {
				a = attrs("other", "x", tt.give.Attr, tt.attr)
			}
			assert.Equal(t, tt.want == held, s.Match(&a))
			out := s.Explain(&a)
			require.Len(t, out, 1)
			if tt.want == held {
				assert.Equal(t, Outcome{Matched: true, Condition: -1}, out[0])
				return
			}
			assert.Equal(t, Outcome{Condition: 0, Attr: tt.give.Attr, Op: tt.give.Op, Present: tt.attr != "<missing>",
				Seen: strings.ReplaceAll(tt.attr, "<missing>", ""), Why: tt.want}, out[0])
		})
	}
}

// TestRulesOrConditionsAnd: a rule holds when all its conditions do, the rules when any does;
// explain names the first failing condition of each rule that failed.
func TestRulesOrConditionsAnd(t *testing.T) {
	t.Parallel()
	rs := []Rule{
		{Conditions: []Condition{condOf("plan", OpIn, Str("pro"), Str("team")), condOf("build", OpSemverGte, Str("8.2"))}},
		{Conditions: []Condition{condOf("email", OpEndsWith, Str("@corp.com"))}},
	}
	s, err := Compile(rs)
	require.NoError(t, err)
	assert.Equal(t, []string{"build", "email", "plan"}, s.Keys())

	pro82 := attrs("plan", "pro", "build", "8.2.1")
	pro81 := attrs("plan", "pro", "build", "8.1")
	staff := attrs("plan", "free", "email", "a@corp.com")
	assert.True(t, s.Match(&pro82))
	assert.False(t, s.Match(&pro81))
	assert.True(t, s.Match(&staff))
	assert.Equal(t, []Outcome{
		{Condition: 1, Attr: "build", Op: OpSemverGte, Present: true, Seen: "8.1", Why: WhyFalse},
		{Condition: 0, Attr: "email", Op: OpEndsWith, Why: WhyMissing},
	}, s.Explain(&pro81))

	var none *Set
	empty := attrs()
	assert.True(t, none.Match(&empty), "no rules hold for every request")
	assert.Nil(t, none.Explain(&empty))
}

// TestValidateNamesThePath: every problem names its input by path.
func TestValidateNamesThePath(t *testing.T) {
	t.Parallel()
	ok := condOf("plan", OpEq, Str("pro"))
	tests := []struct {
		name string
		give []Rule
		want []Problem
	}{
		{"unknown operator", []Rule{{Conditions: []Condition{ok}}, {Conditions: []Condition{condOf("plan", "like", Str("p"))}}},
			[]Problem{{"targeting.rules[1].conditions[0].op", "must be one of " + opList}}},
		{"bad key", []Rule{{Conditions: []Condition{condOf("a b", OpExists)}}},
			[]Problem{{"targeting.rules[0].conditions[0].attr", "must be " + KeyRule}}},
		{"no condition", []Rule{{}}, []Problem{{"targeting.rules[0].conditions", "must have at least one condition"}}},
		{"too many rules", make([]Rule, MaxRules+1), nil},
		{"eq with a list", []Rule{{Conditions: []Condition{condOf("plan", OpEq, Str("a"), Str("b"))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a single value for eq"}}},
		{"exists with a value", []Rule{{Conditions: []Condition{condOf("plan", OpExists, Str("a"))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be absent for exists"}}},
		{"in without values", []Rule{{Conditions: []Condition{condOf("plan", OpIn)}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a list of 1 to 100 values for in"}}},
		{"contains a number", []Rule{{Conditions: []Condition{condOf("plan", OpContains, Num("1"))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a string of 1 to 256 characters for contains"}}},
		{"gt a word", []Rule{{Conditions: []Condition{condOf("n", OpGt, Str("soon"))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a number or an RFC 3339 date-time such as 2026-01-01T00:00:00Z for gt"}}},
		{"gt a boolean", []Rule{{Conditions: []Condition{condOf("n", OpLte, Boolean(true))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a number or an RFC 3339 date-time such as 2026-01-01T00:00:00Z for lte"}}},
		{"semver a number", []Rule{{Conditions: []Condition{condOf("b", OpSemverGt, Num("8"))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a semantic version such as 8.2.0 (as a string) for semver_gt"}}},
		{"semver not a version", []Rule{{Conditions: []Condition{condOf("b", OpSemverGt, Str("8.x"))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a semantic version such as 8.2.0 (as a string) for semver_gt"}}},
		{"regex over the limit", []Rule{{Conditions: []Condition{condOf("e", OpMatches, Str(strings.Repeat("a", MaxPatternLen+1)))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "must be a regular expression of at most 200 characters"}}},
		{"regex that does not compile", []Rule{{Conditions: []Condition{condOf("e", OpMatches, Str("a(b"))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "is not a valid RE2 regular expression: error parsing regexp: missing closing ): `a(b`"}}},
		{"regex with a backreference (not RE2)", []Rule{{Conditions: []Condition{condOf("e", OpMatches, Str(`(a)\1`))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value", "is not a valid RE2 regular expression: error parsing regexp: invalid escape sequence: `\\1`"}}},
		{"string over the limit", []Rule{{Conditions: []Condition{condOf("p", OpIn, Str("a"), Str(strings.Repeat("é", MaxValueLen+1)))}}},
			[]Problem{{"targeting.rules[0].conditions[0].value[1]", "must be at most 256 characters"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ValidateRules("targeting.rules", tt.give)
			if tt.want == nil { // too many rules: the first problem says so
				require.NotEmpty(t, got)
				assert.Equal(t, Problem{"targeting.rules", "must have at most 10 rules"}, got[0])
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
	assert.Equal(t, []Problem{{"targeting.trigger.conditions", "must have at most 10 conditions"}},
		ValidateConditions(nil, "targeting.trigger.conditions", make([]Condition, MaxConditions+1))[:1])
}

func TestCompileRefusesWhatValidateRefuses(t *testing.T) {
	t.Parallel()
	_, err := Compile([]Rule{{Conditions: []Condition{condOf("plan", OpEq, Str("a")), condOf("e", OpMatches, Str("a(b"))}}})
	assert.ErrorContains(t, err, "rules[0]: conditions[1]: value: is not a valid RE2 regular expression")
}

func TestParseSemver(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"1", "8.2", "8.2.0", "v8.2.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7", "1.0.0-x.7.z.92",
		"1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0-x+x"} {
		_, ok := ParseSemver(s)
		assert.True(t, ok, s)
	}
	for _, s := range []string{"", "v", "8.", ".8", "8..2", "1.2.3.4", "01.2", "1.2.3-", "1.2.3-01", "1.2.3-a..b", "1.2.3+", "1.2.3+a_b",
		"1.2.x", "-1.0.0", "1.2.3 ", "99999999999999999999"} {
		_, ok := ParseSemver(s)
		assert.False(t, ok, s)
	}
	// semver.org §11's example order, lowest first
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
		"1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "10.0.0"}
	for i := 0; i+1 < len(order); i++ {
		a, _ := ParseSemver(order[i])
		b, _ := ParseSemver(order[i+1])
		assert.Equal(t, -1, a.Compare(b), "%s < %s", order[i], order[i+1])
		assert.Equal(t, 1, b.Compare(a), "%s > %s", order[i+1], order[i])
		assert.Equal(t, 0, a.Compare(a))
	}
}

func TestValueJSONRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op   Op
		give string
		want []Value
	}{
		{OpEq, `"pro"`, []Value{Str("pro")}},
		{OpEq, `30.5`, []Value{Num("30.5")}},
		{OpEq, `true`, []Value{Boolean(true)}},
		{OpIn, `["a",1,false]`, []Value{Str("a"), Num("1"), Boolean(false)}},
		{OpIn, `["only"]`, []Value{Str("only")}},
		{OpExists, ``, nil},
		{OpEq, `"a\"b\u00e9"`, []Value{Str(`a"bé`)}},
	}
	for _, tt := range tests {
		got, ok := DecodeValue(json.RawMessage(tt.give))
		require.True(t, ok, tt.give)
		assert.Equal(t, tt.want, got, tt.give)
		back, ok := DecodeValue(EncodeValue(tt.op, got))
		require.True(t, ok)
		assert.Equal(t, tt.want, back, tt.give)
	}
	for _, bad := range []string{`{}`, `[[1]]`, `[{}]`, `"unterminated`, `nul`, `[1,`} {
		_, ok := DecodeValue(json.RawMessage(bad))
		assert.False(t, ok, bad)
	}
	assert.Equal(t, `null`, string(json.RawMessage("null")))
	vs, ok := DecodeValue(json.RawMessage("null"))
	assert.True(t, ok)
	assert.Nil(t, vs)
}

func TestAttrsFirstKeyWins(t *testing.T) {
	t.Parallel()
	a := attrs("b", "2", "a", "1", "b", "3")
	assert.Equal(t, []Pair{{"a", "1"}, {"b", "2"}}, a.Pairs())
	many := make([]Pair, 0, 40)
	for i := 0; i < 40; i++ {
		many = append(many, Pair{Key: "k" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Value: "v"})
	}
	m := NewAttrs(many)
	v, ok := m.Get("kza")
	assert.True(t, ok)
	assert.Equal(t, "v", v)
	_, ok = m.Get("kzz")
	assert.False(t, ok)
}

func TestValidValue(t *testing.T) {
	t.Parallel()
	assert.True(t, ValidValue(""))
	assert.True(t, ValidValue(strings.Repeat("é", MaxValueLen)))
	assert.False(t, ValidValue(strings.Repeat("a", MaxValueLen+1)))
	assert.False(t, ValidValue("a\x00b"))
	assert.False(t, ValidValue("a\nb"))
	assert.False(t, ValidValue("\xff"))
}

// TestReadNumberAgreesWithParseFloat: the fast path reads every text as strconv.ParseFloat does,
// and leaves to it what it does not handle.
func TestReadNumberAgreesWithParseFloat(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "-0", "7", "30", "30.0", "1234.5", "-1.5", "0.1", "0.3", "123456789012345", "1234567890123456",
		"0.000000000000001", "99.99", "1e3", "1E-2", "+5", ".5", "5.", "1_000", "0x10", "inf", "NaN", "", "-", "1.2.3", "١"} {
		want, err := strconv.ParseFloat(s, 64)
		wantOK := err == nil && !math.IsInf(want, 0) && !math.IsNaN(want)
		got, ok := readNumber(s)
		assert.Equal(t, wantOK, ok, s)
		if wantOK {
			assert.Equal(t, math.Float64bits(want), math.Float64bits(got), s)
		}
	}
	rng := rand.New(rand.NewPCG(51, 1))
	for range 20000 {
		b := make([]byte, 1+rng.IntN(17))
		for i := range b {
			b[i] = "0123456789"[rng.IntN(10)]
		}
		if rng.IntN(2) == 0 {
			b[rng.IntN(len(b))] = '.'
		}
		s := string(b)
		want, err := strconv.ParseFloat(s, 64)
		got, ok := readNumber(s)
		if assert.Equal(t, err == nil, ok, s) && ok {
			require.Equal(t, math.Float64bits(want), math.Float64bits(got), s)
		}
	}
}
