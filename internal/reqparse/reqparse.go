// Package reqparse reads the public API's two client inputs, the homepage query string and the
// action body, into their raw fields, refusing what is malformed. It imports neither Gin nor
// net/http on purpose: its fuzz targets are fuzzed by every `make test` (scripts/fuzz.sh), and
// `go test -fuzz` compiles everything the package's tests import again with coverage
// instrumentation, which for internal/httpapi's tree (Gin, Prometheus...) cost CPU-minutes.
// Keep its tests on the standard library alone (no testify) for the same reason.
package reqparse

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"popupsvc/internal/event"
	"popupsvc/internal/jsonx"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

// Error is an input refused with a 400: the answer's stable error code and its message, and the
// input it is about when one is named (attr.plan; "" otherwise).
type Error struct{ Code, Message, Field string }

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// ErrUIDMalformed refuses a uid that is present but not well formed, wherever a uid is read.
var ErrUIDMalformed = &Error{Code: "invalid_uid", Message: "uid must be " + popup.UIDRule}

// HomepageQuery holds the raw fields of the homepage query.
// Confirm is the raw "confirm" flag (ParseConfirm reads it).
type HomepageQuery struct {
	UID, Platform, AppVersion, Region, Lang, Confirm, Placement, Event string
	// Attrs and Props are the attr.<key> and prop.<key> parameters (keys without the prefix), in
	// the order sent, each within the limits (addPair); nil when none is sent. Where reads them.
	Attrs, Props []rules.Pair
	// buf holds ScanQuery's first pairs, from pairPool; nil when none was sent (or the query came
	// from elsewhere). Release hands it back.
	buf *pairBuf
}

// pairBuf is the room for a query's first attributes and properties: a query carrying a few
// allocates nothing (the pairs live in a pooled pairBuf, and only more pairs than it holds grow
// onto the heap), where a fresh slice for each was an allocation per request.
type pairBuf struct {
	attrs [8]rules.Pair
	props [4]rules.Pair
}

var pairPool = sync.Pool{New: func() any { return new(pairBuf) }}

// Release hands back the buffer ScanQuery kept q's attributes and properties in, for another
// request's: q's Attrs and Props, and the popup.Where read from them, must not be used after.
// Without it the buffer is left to the garbage collector, which costs an allocation, no more.
func (q *HomepageQuery) Release() {
	b := q.buf
	if b == nil {
		return
	}
	// no hold on the query's strings while pooled
	clear(b.attrs[:min(len(q.Attrs), len(b.attrs))])
	clear(b.props[:min(len(q.Props), len(b.props))])
	q.buf, q.Attrs, q.Props = nil, nil, nil
	pairPool.Put(b)
}

// ScanQuery reads the homepage fields out of a raw query string without building a url.Values
// map; values are unescaped only when they contain an escape. The first occurrence of a key wins,
// as with url.Values.Get (for an attribute too: the first attr.plan is the plan). A query
// without escapes allocates nothing; one with attributes or event properties takes a pooled
// buffer for them, which q.Release hands back.
func ScanQuery(raw string) (HomepageQuery, *Error) {
	var q HomepageQuery
	var seen uint8 // bit i: the i-th field has appeared (the first occurrence wins, even if empty)
	for raw != "" {
		var pair string
		if i := strings.IndexByte(raw, '&'); i >= 0 {
			pair, raw = raw[:i], raw[i+1:]
		} else {
			pair, raw = raw, ""
		}
		key, val := pair, ""
		if i := strings.IndexByte(pair, '='); i >= 0 { // strings.Cut's search, without its dispatch
			key, val = pair[:i], pair[i+1:]
		}
		var dst *string
		var bit uint8
		switch key {
		case "uid":
			dst, bit = &q.UID, 1<<0
		case "platform":
			dst, bit = &q.Platform, 1<<1
		case "app_version":
			dst, bit = &q.AppVersion, 1<<2
		case "region":
			dst, bit = &q.Region, 1<<3
		case "lang":
			dst, bit = &q.Lang, 1<<4
		case "confirm":
			dst, bit = &q.Confirm, 1<<5
		case "placement":
			dst, bit = &q.Placement, 1<<6
		case "event":
			dst, bit = &q.Event, 1<<7
		default:
			if strings.HasPrefix(key, attrPrefix) || strings.HasPrefix(key, propPrefix) {
				if perr := scanPair(&q, key, val); perr != nil {
					return q, perr
				}
			}
			continue
		}
		if seen&bit != 0 {
			continue
		}
		seen |= bit
		if hasEscape(val) {
			v, err := url.QueryUnescape(val)
			if err != nil {
				return q, &Error{Code: "invalid_query", Message: "query string has a malformed escape in " + key}
			}
			val = v
		}
		*dst = val
	}
	return q, nil
}

// scanPair reads one attr.<key> or prop.<key> parameter into q, unescaping its key and value.
// Its checks, and their order, are addPair's after the unescaping; but a key or a value valid as
// it stands (the common case) is read once, where the search for an escape and the validity check
// each read it.
func scanPair(q *HomepageQuery, key, val string) *Error {
	prefix, dst := attrPrefix, &q.Attrs
	if strings.HasPrefix(key, propPrefix) {
		prefix, dst = propPrefix, &q.Props
	}
	k := key[len(prefix):]
	// A valid key has no '%' or '+' (KeyRule); a plain value neither, by its definition.
	keyOK, valOK := rules.ValidKey(k), plainValue(val)
	if !keyOK && hasEscape(k) {
		u, err := url.QueryUnescape(k)
		if err != nil {
			return &Error{Code: "invalid_query", Message: "query string has a malformed escape in " + prefix + quoteShort(k)}
		}
		k = u
	}
	if !valOK && hasEscape(val) {
		u, err := url.QueryUnescape(val)
		if err != nil {
			return &Error{Code: "invalid_query", Message: "query string has a malformed escape in " + prefix + quoteShort(k)}
		}
		val = u
	}
	for _, p := range *dst {
		if p.Key == k {
			return nil // the first occurrence wins
		}
	}
	limit := rules.MaxRequestKeys
	if prefix == propPrefix {
		limit = rules.MaxProperties
	}
	if !keyOK || !valOK || len(*dst) == limit { // else nothing for checkPair to refuse
		if perr := checkPair(len(*dst), prefix, k, val, keyOK, valOK); perr != nil {
			return perr
		}
	}
	if *dst == nil {
		if q.buf == nil {
			q.buf = pairPool.Get().(*pairBuf)
		}
		if prefix == attrPrefix {
			*dst = q.buf.attrs[:0]
		} else {
			*dst = q.buf.props[:0]
		}
	}
	*dst = append(*dst, rules.Pair{Key: k, Value: val})
	return nil
}

// hasEscape reports whether a query string's key or value holds an escape: a '%' or a '+'.
func hasEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c == '+' {
			return true
		}
	}
	return false
}

// plainValue reports whether s is a valid value as it stands, with no escape to undo: at most
// MaxValueLen bytes of printable ASCII other than '%' and '+'. False says nothing either way
// (unescape, then ValidValue decides).
func plainValue(s string) bool {
	if len(s) > rules.MaxValueLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '%' || c == '+' {
			return false
		}
	}
	return true
}

// ParseConfirm reads the homepage's confirm flag: "1" or "true" asks for a decision that counts
// only once the client confirms it; absent, "0" or "false" for one that counts at once.
func ParseConfirm(v string) (bool, *Error) {
	switch v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, &Error{Code: "invalid_confirm", Message: "confirm must be 1, true, 0 or false"}
}

// ActionBody is the body of POST /api/v1/popups/{id}/actions.
type ActionBody struct {
	UID        string
	Action     string
	EventID    string
	DecisionID string
	// Button is the clicked button (a click's optional "button", its 0-based index); the zero
	// value is "unspecified". Whether the popup has that many buttons is the caller's to check
	// against its config.
	Button event.ButtonRef
}

// actionWire is the action body as sent; button stays raw so that a wrong one is refused naming
// it rather than as a JSON error.
type actionWire struct {
	UID        string          `json:"uid"`
	Action     string          `json:"action"`
	EventID    string          `json:"event_id"`
	DecisionID string          `json:"decision_id"`
	Button     json.RawMessage `json:"button"`
}

// DecodeActionBody parses and validates an action body: what it accepts is fit to queue (a
// valid uid, click, close or impression (a confirmation, with its decision id), valid ids when
// present, a button index only with a click).
func DecodeActionBody(raw []byte) (ActionBody, *Error) {
	var w actionWire
	if err := jsonx.Unmarshal(raw, &w); err != nil {
		return ActionBody{}, &Error{Code: "invalid_json", Message: "body must be a JSON object like {\"uid\":\"u1\",\"action\":\"click\"}"}
	}
	b := ActionBody{UID: w.UID, Action: w.Action, EventID: w.EventID, DecisionID: w.DecisionID}
	switch {
	case b.UID == "":
		return b, &Error{Code: "invalid_uid", Message: "uid is required"}
	case !popup.ValidUID(b.UID):
		return b, ErrUIDMalformed
	case b.Action != string(event.Click) && b.Action != string(event.Close) && b.Action != string(event.Impression):
		return b, &Error{Code: "invalid_action", Message: "action must be click, close or impression"}
	case b.Action == string(event.Impression) && b.DecisionID == "":
		return b, &Error{Code: "invalid_decision_id", Message: "decision_id is required with action impression: it names the decision to confirm"}
	case b.EventID != "" && !validID(b.EventID):
		return b, &Error{Code: "invalid_event_id", Message: "event_id must be " + popup.UIDRule}
	case b.DecisionID != "" && !validDecisionID(b.DecisionID):
		return b, &Error{Code: "invalid_decision_id", Message: "decision_id must be " + DecisionIDRule}
	}
	w.Button = bytes.TrimSpace(w.Button) // a decoder may keep the spaces around a raw value
	if len(w.Button) == 0 || string(w.Button) == "null" {
		return b, nil
	}
	if b.Action != string(event.Click) {
		return b, &Error{Code: "invalid_button", Message: "button goes only with action click"}
	}
	// Plain digits only: JSON's 1.0, 1e0, "1" and -1 are not a button index.
	i, err := strconv.Atoi(string(w.Button))
	if err != nil || i < 0 || i > event.MaxButton || w.Button[0] == '-' {
		return b, ErrButtonRange
	}
	b.Button = event.ButtonAt(i)
	return b, nil
}

// ErrButtonRange refuses a button that is not an index of the popup's buttons.
var ErrButtonRange = &Error{Code: "invalid_button", Message: "button must be an integer index of the popup's buttons, from 0"}

// validID accepts client event ids: 1-64 characters of [A-Za-z0-9_.:-].
func validID(s string) bool { return popup.ValidUID(s) }

// DecisionIDRule describes a well-formed decision id in the words its error message uses: a
// uid's characters and '~', which an experiment's decision id carries (docs/CONTRACT.md §10).
const DecisionIDRule = "1-64 characters of [A-Za-z0-9_.:~-]"

// validDecisionID accepts the decision ids the API hands out: DecisionIDRule.
func validDecisionID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '~' || c == '-') {
			return false
		}
	}
	return true
}
