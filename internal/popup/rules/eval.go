package rules

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Pair is one attribute of a request: its key and its text.
type Pair struct{ Key, Value string }

// Attrs are a request's attributes (or an event's properties), sorted by key, each key once.
// The zero Attrs has none.
type Attrs struct{ pairs []Pair }

// NewAttrs sorts pairs by key (in place) and keeps the first of a repeated key.
func NewAttrs(pairs []Pair) Attrs {
	if len(pairs) > smallSort {
		slices.SortStableFunc(pairs, func(a, b Pair) int { return strings.Compare(a.Key, b.Key) })
	} else {
		// A request's few attributes: an insertion sort (stable: it moves a pair only past
		// greater keys) without the generic sort's calls, and a single pass over pairs already
		// in order.
		for i := 1; i < len(pairs); i++ {
			for j := i; j > 0 && pairs[j].Key < pairs[j-1].Key; j-- {
				pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
			}
		}
	}
	for i := 1; i < len(pairs); i++ {
		if pairs[i].Key == pairs[i-1].Key {
			pairs = slices.CompactFunc(pairs, func(a, b Pair) bool { return a.Key == b.Key })
			break
		}
	}
	return Attrs{pairs: pairs}
}

// smallSort is the most pairs NewAttrs sorts by insertion.
const smallSort = 12

// Len is the number of attributes.
func (a *Attrs) Len() int { return len(a.pairs) }

// Pairs are the attributes, sorted by key. The caller must not modify them.
func (a *Attrs) Pairs() []Pair { return a.pairs }

// Get returns the text of key and whether the attributes hold it.
func (a *Attrs) Get(key string) (string, bool) {
	ps := a.pairs
	if len(ps) <= 16 {
		for i := range ps {
			if ps[i].Key == key {
				return ps[i].Value, true
			}
		}
		return "", false
	}
	lo, hi := 0, len(ps)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ps[m].Key < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ps) && ps[lo].Key == key {
		return ps[lo].Value, true
	}
	return "", false
}

// Set is compiled rules: Match holds when any rule holds, a rule when all its conditions hold.
// A nil *Set has no rules and holds for every request. It is immutable, so one Set serves any
// number of concurrent requests.
type Set struct {
	rules [][]cond
	keys  []string
}

// opCode is an operator as a small integer: a compiled condition dispatches on it rather than
// on the operator's name.
type opCode uint8

const (
	codeEq opCode = iota
	codeNeq
	codeIn
	codeNotIn
	codeContains
	codeStartsWith
	codeEndsWith
	codeMatches
	codeGt
	codeGte
	codeLt
	codeLte
	codeSemverEq
	codeSemverGt
	codeSemverGte
	codeSemverLt
	codeSemverLte
	codeExists
	codeNotExists
)

// codes maps each operator to its code (Ops is in code order).
var codes = func() map[Op]opCode {
	m := make(map[Op]opCode, len(Ops))
	for i, op := range Ops {
		m[op] = opCode(i)
	}
	return m
}()

// cond is a compiled condition: its operand parsed once, for the type the operator reads.
type cond struct {
	key  string
	op   Op
	code opCode
	kind Kind // of the operand, for eq, neq, gt, gte, lt, lte (Number or String: a date-time)
	str  string
	num  float64
	when time.Time
	ver  Semver
	re   *regexp.Regexp
	// the members of an in / not_in list, by kind; a long list of strings as a set too
	strs  []string
	set   map[string]struct{}
	nums  []float64
	bools uint8 // bit 0: false is a member, bit 1: true is
}

// Compile prepares rs for evaluation; nil for no rules. rs must have passed ValidateRules: an
// operand it cannot read is an error.
func Compile(rs []Rule) (*Set, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	s := &Set{rules: make([][]cond, len(rs))}
	for i, r := range rs {
		cs, err := compileAll(r.Conditions)
		if err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
		s.rules[i] = cs
	}
	s.keys = keysOf(s.rules)
	return s, nil
}

// CompileConditions prepares conditions that must all hold (a trigger's); nil for none.
func CompileConditions(cs []Condition) (*Set, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	c, err := compileAll(cs)
	if err != nil {
		return nil, err
	}
	s := &Set{rules: [][]cond{c}}
	s.keys = keysOf(s.rules)
	return s, nil
}

func compileAll(cs []Condition) ([]cond, error) {
	out := make([]cond, len(cs))
	for i := range cs {
		c, err := compileCondition(&cs[i])
		if err != nil {
			return nil, fmt.Errorf("conditions[%d]: %w", i, err)
		}
		out[i] = c
	}
	return out, nil
}

func compileCondition(c *Condition) (cond, error) {
	if p := validateCondition(nil, "", c); len(p) > 0 {
		return cond{}, fmt.Errorf("%s: %s", strings.TrimPrefix(p[0].Path, "."), p[0].Message)
	}
	k := cond{key: c.Attr, op: c.Op, code: codes[c.Op]}
	switch c.Op {
	case OpEq, OpNeq:
		v := c.Values[0]
		k.kind, k.str = v.Kind, v.Text
		k.num, _ = parseNumber(v)
	case OpIn, OpNotIn:
		for _, v := range c.Values {
			switch v.Kind {
			case String:
				k.strs = append(k.strs, v.Text)
			case Number:
				n, _ := parseNumber(v)
				k.nums = append(k.nums, n)
			case Bool:
				k.bools |= boolBit(v.Text == "true")
			}
		}
		if len(k.strs) > 4 { // past a few, one hash beats comparing each
			k.set = make(map[string]struct{}, len(k.strs))
			for _, s := range k.strs {
				k.set[s] = struct{}{}
			}
		}
	case OpContains, OpStartsWith, OpEndsWith:
		k.str = c.Values[0].Text
	case OpMatches:
		k.re = regexp.MustCompile(c.Values[0].Text) // validated above
	case OpGt, OpGte, OpLt, OpLte:
		v := c.Values[0]
		if n, ok := parseNumber(v); ok {
			k.kind, k.num = Number, n
		} else {
			k.kind, k.when = String, mustTime(parseTime(v))
		}
	case OpSemverEq, OpSemverGt, OpSemverGte, OpSemverLt, OpSemverLte:
		k.ver, _ = ParseSemver(c.Values[0].Text)
	}
	return k, nil
}

func mustTime(t time.Time, _ bool) time.Time { return t }

func boolBit(b bool) uint8 {
	if b {
		return 2
	}
	return 1
}

func keysOf(rules [][]cond) []string {
	var keys []string
	for _, r := range rules {
		for i := range r {
			keys = append(keys, r[i].key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Keys are the attribute keys the set reads, sorted, each once: what a cached answer must be
// keyed by besides the request's other fields.
func (s *Set) Keys() []string {
	if s == nil {
		return nil
	}
	return s.keys
}

// Match reports whether a satisfies s: some rule whose every condition holds (true for a nil s).
// It does not allocate.
func (s *Set) Match(a *Attrs) bool {
	if s == nil {
		return true
	}
	for _, r := range s.rules {
		if allHold(r, a) {
			return true
		}
	}
	return false
}

func allHold(r []cond, a *Attrs) bool {
	for i := range r {
		text, present := a.Get(r[i].key)
		if r[i].eval(text, present) != held {
			return false
		}
	}
	return true
}

// Why says why a condition failed.
type Why string

// The reasons a condition fails.
const (
	held        Why = ""
	WhyMissing  Why = "missing"  // the request does not carry the attribute
	WhyMistyped Why = "mistyped" // its text cannot be read as the operand's type
	WhyFalse    Why = "false"    // it was read, and the comparison is false
)

// Outcome is one rule's result for a request, for explain: whether it held, else its first
// condition that failed (by index), the attribute and operator, the value seen and why.
type Outcome struct {
	Matched   bool
	Condition int // -1 when Matched
	Attr      string
	Op        Op
	Present   bool
	Seen      string // the attribute's text; "" when not Present
	Why       Why
}

// Explain evaluates every rule of s for a and returns their outcomes, by rule (nil for a nil s).
func (s *Set) Explain(a *Attrs) []Outcome {
	if s == nil {
		return nil
	}
	out := make([]Outcome, len(s.rules))
	for i, r := range s.rules {
		out[i] = Outcome{Matched: true, Condition: -1}
		for j := range r {
			text, present := a.Get(r[j].key)
			if why := r[j].eval(text, present); why != held {
				out[i] = Outcome{Condition: j, Attr: r[j].key, Op: r[j].op, Present: present, Seen: text, Why: why}
				break
			}
		}
	}
	return out
}

// verdict turns a comparison into a Why.
func verdict(ok bool) Why {
	if ok {
		return held
	}
	return WhyFalse
}

// eval tests one attribute's text (present false: the request does not carry it).
func (k *cond) eval(text string, present bool) Why {
	switch k.code {
	case codeExists:
		if present {
			return held
		}
		return WhyMissing
	case codeNotExists:
		return verdict(!present)
	}
	if !present {
		return WhyMissing
	}
	switch k.code {
	case codeEq, codeNeq:
		eq, ok := k.equal(text)
		if !ok {
			return WhyMistyped
		}
		return verdict(eq == (k.code == codeEq))
	case codeIn, codeNotIn:
		in, ok := k.member(text)
		if !ok {
			return WhyMistyped
		}
		return verdict(in == (k.code == codeIn))
	case codeContains:
		return verdict(strings.Contains(text, k.str))
	case codeStartsWith:
		return verdict(strings.HasPrefix(text, k.str))
	case codeEndsWith:
		return verdict(strings.HasSuffix(text, k.str))
	case codeMatches:
		return verdict(k.re.MatchString(text))
	case codeGt, codeGte, codeLt, codeLte:
		var c int
		if k.kind == Number {
			n, ok := readNumber(text)
			if !ok {
				return WhyMistyped
			}
			c = cmp.Compare(n, k.num)
		} else {
			t, ok := readTime(text)
			if !ok {
				return WhyMistyped
			}
			c = t.Compare(k.when)
		}
		return verdict(ordered(k.code, c))
	case codeSemverEq, codeSemverGt, codeSemverGte, codeSemverLt, codeSemverLte:
		v, ok := ParseSemver(text)
		if !ok {
			return WhyMistyped
		}
		return verdict(ordered(k.code, v.Compare(k.ver)))
	}
	return WhyFalse // unreachable for a compiled condition
}

// ordered applies an ordering operator to a comparison's result c (-1, 0, +1).
func ordered(op opCode, c int) bool {
	switch op {
	case codeGt, codeSemverGt:
		return c > 0
	case codeGte, codeSemverGte:
		return c >= 0
	case codeLt, codeSemverLt:
		return c < 0
	case codeLte, codeSemverLte:
		return c <= 0
	}
	return c == 0 // semver_eq
}

// equal compares text with an eq/neq operand read as the operand's kind; ok is false when the
// text cannot be read so.
func (k *cond) equal(text string) (eq, ok bool) {
	switch k.kind {
	case Number:
		n, ok := readNumber(text)
		return ok && n == k.num, ok
	case Bool:
		if text != "true" && text != "false" {
			return false, false
		}
		return text == k.str, true
	}
	return text == k.str, true
}

// member tests text against an in/not_in list; ok is false when the text can be read as none of
// the list's kinds (a list of numbers, "abc").
func (k *cond) member(text string) (in, ok bool) {
	ok = len(k.strs) > 0
	if k.set != nil {
		if _, in := k.set[text]; in {
			return true, true
		}
	} else if slices.Contains(k.strs, text) {
		return true, true
	}
	if len(k.nums) > 0 {
		if n, isNum := readNumber(text); isNum {
			ok = true
			if slices.Contains(k.nums, n) {
				return true, true
			}
		}
	}
	if k.bools != 0 && (text == "true" || text == "false") {
		ok = true
		if k.bools&boolBit(text == "true") != 0 {
			return true, true
		}
	}
	return false, ok
}
