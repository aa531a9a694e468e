// Package rules is the condition language of targeting rules and triggers: conditions on a
// request's attributes (or an event's properties) with typed operators, validated when a popup is
// written, compiled once when a snapshot is built, and evaluated per request without allocating.
//
// A rule holds when all of its conditions hold (AND); a list of rules holds when any of them does
// (OR); an empty list holds for every request. A condition on an attribute the request does not
// carry, or carries as text its operator cannot read (a number operator given "abc"), is false,
// never an error for the app: Explain says which condition failed and the value it saw.
//
// Attribute values travel as text (a query string has no types). A condition's operand gives the
// type the text is read as: a number for a numeric operand or operator, a date-time (RFC 3339)
// for a date operand, a semantic version for the semver operators, true/false for a boolean
// operand, the text itself otherwise.
package rules

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Op is a condition's operator.
type Op string

// The operators (docs/CONTRACT.md §2, "Rules").
const (
	OpEq         Op = "eq"
	OpNeq        Op = "neq"
	OpIn         Op = "in"
	OpNotIn      Op = "not_in"
	OpContains   Op = "contains"
	OpStartsWith Op = "starts_with"
	OpEndsWith   Op = "ends_with"
	OpMatches    Op = "matches"
	OpGt         Op = "gt"
	OpGte        Op = "gte"
	OpLt         Op = "lt"
	OpLte        Op = "lte"
	OpSemverEq   Op = "semver_eq"
	OpSemverGt   Op = "semver_gt"
	OpSemverGte  Op = "semver_gte"
	OpSemverLt   Op = "semver_lt"
	OpSemverLte  Op = "semver_lte"
	OpExists     Op = "exists"
	OpNotExists  Op = "not_exists"
)

// Ops lists every operator, in the order the contract documents them.
var Ops = []Op{OpEq, OpNeq, OpIn, OpNotIn, OpContains, OpStartsWith, OpEndsWith, OpMatches, OpGt, OpGte, OpLt, OpLte,
	OpSemverEq, OpSemverGt, OpSemverGte, OpSemverLt, OpSemverLte, OpExists, OpNotExists}

// opList is Ops as an error message says it.
var opList = func() string {
	s := make([]string, len(Ops))
	for i, op := range Ops {
		s[i] = string(op)
	}
	return strings.Join(s, ", ")
}()

// Kind is the JSON type of a configured operand.
type Kind uint8

// The kinds of Value.
const (
	String Kind = iota + 1
	Number
	Bool
)

// Value is one configured operand: its JSON type and its text (a string's own text, a number's
// JSON text, "true" or "false").
type Value struct {
	Kind Kind
	Text string
}

// Str, Num and Boolean make a Value of each kind (Num takes a number's text, "30" or "4.5").
func Str(s string) Value       { return Value{Kind: String, Text: s} }
func Num(text string) Value    { return Value{Kind: Number, Text: text} }
func Boolean(b bool) Value     { return Value{Kind: Bool, Text: strconv.FormatBool(b)} }
func (v Value) isString() bool { return v.Kind == String }

// Condition is one test of an attribute: Attr Op Values. in and not_in take a list of one or more
// values; exists and not_exists none; every other operator exactly one.
type Condition struct {
	Attr   string
	Op     Op
	Values []Value
}

// Rule holds when every one of its conditions does.
type Rule struct {
	Conditions []Condition
}

// Limits enforced by Validate. They keep a popup's rules small (every instance holds them and
// evaluates them per request) and a regular expression's cost bounded.
const (
	MaxRules       = 10  // rules of a popup
	MaxConditions  = 10  // conditions of a rule or a trigger
	MaxListValues  = 100 // values of an in or not_in list
	MaxValueLen    = 256 // characters of a string operand, and of an attribute's value in a request
	MaxPatternLen  = 200 // characters of a matches pattern
	MaxKeyLen      = 64  // characters of an attribute key
	MaxRequestKeys = 50  // attributes of a request
	MaxProperties  = 20  // properties of a request's event
)

// KeyRule describes a well-formed attribute (or event property) key in the words every error
// message uses.
const KeyRule = "1-64 characters of [A-Za-z0-9_.-]"

// ValidKey reports whether s is an attribute key: KeyRule.
func ValidKey(s string) bool {
	if len(s) == 0 || len(s) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// ValueRule describes a well-formed attribute value.
const ValueRule = "at most 256 characters of UTF-8 text without control characters"

// ValidValue reports whether s may be an attribute's value in a request: ValueRule.
func ValidValue(s string) bool {
	if len(s) > 4*MaxValueLen {
		return false
	}
	n := 0
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f {
			// (a RuneError from a valid "\uFFFD" is refused too: rare, and harmless to refuse)
			return false
		}
		n++
	}
	return n <= MaxValueLen
}

// Problem is one validation problem: Path names the offending input
// ("targeting.rules[1].conditions[0].op").
type Problem struct {
	Path, Message string
}

// ValidateRules checks a popup's rules, reporting under path ("targeting.rules").
func ValidateRules(path string, rs []Rule) []Problem {
	var out []Problem
	if len(rs) > MaxRules {
		out = append(out, Problem{path, "must have at most " + strconv.Itoa(MaxRules) + " rules"})
	}
	for i, r := range rs {
		rp := path + "[" + strconv.Itoa(i) + "].conditions"
		if len(r.Conditions) == 0 {
			out = append(out, Problem{rp, "must have at least one condition"})
		}
		out = ValidateConditions(out, rp, r.Conditions)
	}
	return out
}

// ValidateConditions appends to out the problems of cs, reported under path
// ("targeting.trigger.conditions").
func ValidateConditions(out []Problem, path string, cs []Condition) []Problem {
	if len(cs) > MaxConditions {
		out = append(out, Problem{path, "must have at most " + strconv.Itoa(MaxConditions) + " conditions"})
	}
	for i := range cs {
		out = validateCondition(out, path+"["+strconv.Itoa(i)+"]", &cs[i])
	}
	return out
}

func validateCondition(out []Problem, path string, c *Condition) []Problem {
	if !ValidKey(c.Attr) {
		out = append(out, Problem{path + ".attr", "must be " + KeyRule})
	}
	vp := path + ".value"
	one := func() (Value, bool) {
		if len(c.Values) != 1 {
			out = append(out, Problem{vp, "must be a single value for " + string(c.Op)})
			return Value{}, false
		}
		return c.Values[0], true
	}
	switch c.Op {
	case OpExists, OpNotExists:
		if len(c.Values) > 0 {
			out = append(out, Problem{vp, "must be absent for " + string(c.Op)})
		}
	case OpEq, OpNeq:
		if v, ok := one(); ok {
			out = validateScalar(out, vp, v)
		}
	case OpIn, OpNotIn:
		switch n := len(c.Values); {
		case n == 0:
			out = append(out, Problem{vp, "must be a list of 1 to " + strconv.Itoa(MaxListValues) + " values for " + string(c.Op)})
		case n > MaxListValues:
			out = append(out, Problem{vp, "must have at most " + strconv.Itoa(MaxListValues) + " values"})
		}
		for i, v := range c.Values {
			out = validateScalar(out, vp+"["+strconv.Itoa(i)+"]", v)
		}
	case OpContains, OpStartsWith, OpEndsWith:
		if v, ok := one(); ok {
			if !v.isString() || v.Text == "" || utf8.RuneCountInString(v.Text) > MaxValueLen {
				out = append(out, Problem{vp, "must be a string of 1 to " + strconv.Itoa(MaxValueLen) + " characters for " + string(c.Op)})
			}
		}
	case OpMatches:
		if v, ok := one(); ok {
			switch {
			case !v.isString() || v.Text == "":
				out = append(out, Problem{vp, "must be a regular expression (RE2 syntax) as a string"})
			case utf8.RuneCountInString(v.Text) > MaxPatternLen:
				out = append(out, Problem{vp, "must be a regular expression of at most " + strconv.Itoa(MaxPatternLen) + " characters"})
			default:
				if _, err := regexp.Compile(v.Text); err != nil {
					out = append(out, Problem{vp, "is not a valid RE2 regular expression: " + err.Error()})
				}
			}
		}
	case OpGt, OpGte, OpLt, OpLte:
		if v, ok := one(); ok {
			_, numOK := parseNumber(v)
			_, timeOK := parseTime(v)
			if !numOK && !timeOK {
				out = append(out, Problem{vp, "must be a number or an RFC 3339 date-time such as 2026-01-01T00:00:00Z for " + string(c.Op)})
			}
		}
	case OpSemverEq, OpSemverGt, OpSemverGte, OpSemverLt, OpSemverLte:
		if v, ok := one(); ok {
			if _, ok := ParseSemver(v.Text); !v.isString() || !ok {
				out = append(out, Problem{vp, "must be a semantic version such as 8.2.0 (as a string) for " + string(c.Op)})
			}
		}
	default:
		out = append(out, Problem{path + ".op", "must be one of " + opList})
	}
	return out
}

// validateScalar checks an eq/neq/in/not_in operand: a string of at most MaxValueLen characters,
// a finite number or a boolean.
func validateScalar(out []Problem, path string, v Value) []Problem {
	switch v.Kind {
	case String:
		if utf8.RuneCountInString(v.Text) > MaxValueLen {
			out = append(out, Problem{path, "must be at most " + strconv.Itoa(MaxValueLen) + " characters"})
		}
	case Number:
		if _, ok := parseNumber(v); !ok {
			out = append(out, Problem{path, "must be a finite number"})
		}
	case Bool:
		if v.Text != "true" && v.Text != "false" {
			out = append(out, Problem{path, "must be true or false"})
		}
	default:
		out = append(out, Problem{path, "must be a string, a number or a boolean"})
	}
	return out
}

// parseNumber reads a Number operand.
func parseNumber(v Value) (float64, bool) {
	if v.Kind != Number {
		return 0, false
	}
	return readNumber(v.Text)
}

// readNumber reads text as a finite number (an attribute's text, or a number operand's).
func readNumber(s string) (float64, bool) {
	if f, ok := readDecimal(s); ok {
		return f, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// readDecimal is readNumber's fast path for the common text, [-]digits[.digits] with at most 15
// digits: the digits are an exact float64 and so is the power of ten, so one division gives the
// correctly rounded value, the one strconv.ParseFloat gives (Clinger's fast path). ok is false
// for anything else, which ParseFloat then reads.
func readDecimal(s string) (float64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot && i > 0 && i < len(s)-1:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	f := float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// parseTime reads a String operand as an RFC 3339 date-time.
func parseTime(v Value) (time.Time, bool) {
	if v.Kind != String {
		return time.Time{}, false
	}
	return readTime(v.Text)
}

// readTime reads text as an RFC 3339 date-time (fractional seconds allowed).
func readTime(s string) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' {
		return time.Time{}, false // most text is refused before the parser runs
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// DecodeValue reads a condition's operand as JSON holds it: absent (empty raw or null: no values),
// a scalar (one value) or an array of scalars (a list). ok is false for anything else (an object, a
// nested array), which the caller reports naming the field.
func DecodeValue(raw json.RawMessage) (vs []Value, ok bool) {
	raw = trimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	if raw[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, false
		}
		vs = make([]Value, 0, len(items))
		for _, it := range items {
			v, ok := decodeScalar(trimSpace(it))
			if !ok {
				return nil, false
			}
			vs = append(vs, v)
		}
		return vs, true
	}
	v, ok := decodeScalar(raw)
	if !ok {
		return nil, false
	}
	return []Value{v}, true
}

func decodeScalar(raw json.RawMessage) (Value, bool) {
	switch {
	case len(raw) == 0:
		return Value{}, false
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return Value{}, false
		}
		return Str(s), true
	case string(raw) == "true" || string(raw) == "false":
		return Value{Kind: Bool, Text: string(raw)}, true
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return Value{}, false
		}
		return Num(n.String()), true
	}
	return Value{}, false
}

// EncodeValue is the JSON of op's operand vs: absent (nil) for none, an array for in and not_in, a
// scalar otherwise. It is DecodeValue's inverse.
func EncodeValue(op Op, vs []Value) json.RawMessage {
	if len(vs) == 0 {
		return nil
	}
	list := op == OpIn || op == OpNotIn || len(vs) > 1
	var b []byte
	if list {
		b = append(b, '[')
	}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		switch v.Kind {
		case String:
			s, _ := json.Marshal(v.Text) // a string always encodes
			b = append(b, s...)
		case Number, Bool:
			b = append(b, v.Text...)
		default:
			b = append(b, "null"...)
		}
	}
	if list {
		b = append(b, ']')
	}
	return b
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
