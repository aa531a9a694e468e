package reqparse

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"popupsvc/internal/jsonx"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

// The prefixes of the homepage query's attribute and event-property parameters:
// attr.plan=pro, prop.amount=45.5.
const (
	attrPrefix = "attr."
	propPrefix = "prop."
)

// addPair checks one attr.<key> or prop.<key> parameter (key without its prefix, value unescaped)
// against the limits and appends it to *dst: a 400 naming the parameter for a bad key, a bad value
// or one too many.
func addPair(dst *[]rules.Pair, prefix, key, val string) *Error {
	if perr := checkPair(len(*dst), prefix, key, val, false, false); perr != nil {
		return perr
	}
	if *dst == nil {
		*dst = make([]rules.Pair, 0, 8)
	}
	*dst = append(*dst, rules.Pair{Key: key, Value: val})
	return nil
}

// checkPair is addPair's checks of a pair to add to have pairs: the limit, then the key, then the
// value; keyOK and valOK say the key and the value are already known to be valid.
func checkPair(have int, prefix, key, val string, keyOK, valOK bool) *Error {
	code, limit, what := "invalid_attr", rules.MaxRequestKeys, "attributes"
	if prefix == propPrefix {
		code, limit, what = "invalid_event_property", rules.MaxProperties, "event properties"
	}
	if have == limit {
		return &Error{Code: code, Field: prefix + "*", Message: "at most " + strconv.Itoa(limit) + " " + what + " (" + prefix + "<key>) may be sent"}
	}
	if !keyOK && !rules.ValidKey(key) {
		name := prefix + quoteShort(key)
		return &Error{Code: code, Field: name, Message: name + ": the key must be " + rules.KeyRule}
	}
	if !valOK && !rules.ValidValue(val) {
		return &Error{Code: code, Field: prefix + key, Message: prefix + key + ": the value must be " + rules.ValueRule}
	}
	return nil
}

// quoteShort quotes a refused key for a message: at most 64 bytes of it, in ASCII.
func quoteShort(s string) string {
	if len(s) > rules.MaxKeyLen {
		s = s[:rules.MaxKeyLen]
	}
	return strconv.QuoteToASCII(s)
}

// Where reads the placement, the event and its properties, and the attributes of q into the
// request's popup.Where: a 400 for a malformed placement or event, or properties without an event.
// It sorts q's pairs in place.
func (q *HomepageQuery) Where() (popup.Where, *Error) {
	w := popup.Where{Placement: q.Placement, Event: q.Event}
	if w.Placement != "" && !popup.ValidPlacement(w.Placement) {
		return w, &Error{Code: "invalid_placement", Field: "placement", Message: "placement must be " + popup.PlacementRule}
	}
	if w.Event != "" && !popup.ValidEvent(w.Event) {
		return w, &Error{Code: "invalid_event", Field: "event", Message: "event must be " + popup.EventRule}
	}
	if w.Event == "" && len(q.Props) > 0 {
		return w, &Error{Code: "invalid_event_property", Field: propPrefix + q.Props[0].Key,
			Message: propPrefix + q.Props[0].Key + ": event properties go only with an event"}
	}
	if len(q.Props) > 0 {
		w.Props = rules.NewAttrs(q.Props)
	}
	if len(q.Attrs) > 0 {
		w.Attrs = rules.NewAttrs(q.Attrs)
	}
	return w, nil
}

// DecisionBody is the body of POST /api/v1/decisions as sent: the homepage query's fields as
// JSON, event properties and attributes as objects of strings, numbers and booleans.
type decisionWire struct {
	UID        string          `json:"uid"`
	Platform   string          `json:"platform"`
	AppVersion string          `json:"app_version"`
	Region     string          `json:"region"`
	Lang       string          `json:"lang"`
	Confirm    json.RawMessage `json:"confirm"`
	Placement  string          `json:"placement"`
	Event      string          `json:"event"`
	Properties json.RawMessage `json:"event_properties"`
	Attrs      json.RawMessage `json:"attrs"`
}

// DecodeDecisionBody reads the body of POST /api/v1/decisions into the HomepageQuery the same
// request as a query string would give, so that both answer alike: a number or a boolean
// attribute becomes its JSON text (45.5, true), as the query string would carry it; confirm may
// be a boolean or the query's strings. Limits and refusals are the query's.
func DecodeDecisionBody(raw []byte) (HomepageQuery, *Error) {
	var w decisionWire
	if err := jsonx.Unmarshal(raw, &w); err != nil {
		return HomepageQuery{}, &Error{Code: "invalid_json",
			Message: `body must be a JSON object like {"uid":"u1","platform":"ios","app_version":"8.10.0","attrs":{"plan":"pro"}}`}
	}
	q := HomepageQuery{UID: w.UID, Platform: w.Platform, AppVersion: w.AppVersion, Region: w.Region, Lang: w.Lang,
		Placement: w.Placement, Event: w.Event}
	switch c := string(bytes.TrimSpace(w.Confirm)); {
	case c == "" || c == "null":
	case c == "true" || c == "false":
		q.Confirm = c
	default:
		var s string
		if json.Unmarshal(w.Confirm, &s) != nil {
			return q, &Error{Code: "invalid_confirm", Field: "confirm", Message: "confirm must be true or false"}
		}
		q.Confirm = s
	}
	var perr *Error
	if q.Props, perr = decodePairs(w.Properties, propPrefix, "event_properties"); perr != nil {
		return q, perr
	}
	if q.Attrs, perr = decodePairs(w.Attrs, attrPrefix, "attrs"); perr != nil {
		return q, perr
	}
	return q, nil
}

// decodePairs reads an object of scalars into pairs, in the query's order of checks (addPair).
func decodePairs(raw json.RawMessage, prefix, field string) ([]rules.Pair, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	code, limit, what := "invalid_attr", rules.MaxRequestKeys, "attributes"
	if prefix == propPrefix {
		code, limit, what = "invalid_event_property", rules.MaxProperties, "event properties"
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, &Error{Code: code, Field: field, Message: field + " must be an object of strings, numbers and booleans"}
	}
	if len(m) > limit {
		return nil, &Error{Code: code, Field: field, Message: "at most " + strconv.Itoa(limit) + " " + what + " may be sent"}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// A fixed order, so that which of several bad entries is named does not vary between calls.
	slices.Sort(keys)
	var out []rules.Pair
	for _, k := range keys {
		v := bytes.TrimSpace(m[k])
		var text string
		switch {
		case len(v) > 0 && v[0] == '"':
			if json.Unmarshal(v, &text) != nil {
				return nil, &Error{Code: code, Field: prefix + k, Message: prefix + k + ": the value must be a string, a number or a boolean"}
			}
		case string(v) == "true" || string(v) == "false" || len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
			text = string(v)
		default:
			name := prefix + quoteShort(k)
			if rules.ValidKey(k) {
				name = prefix + k
			}
			return nil, &Error{Code: code, Field: name, Message: name + ": the value must be a string, a number or a boolean"}
		}
		if perr := addPair(&out, prefix, k, text); perr != nil {
			return nil, perr
		}
	}
	return out, nil
}

// DecodeWhere reads a JSON body's placement, event, event_properties and attrs (the admin
// preview's, as POST /api/v1/decisions has them) into a popup.Where, with the public API's limits
// and refusals.
func DecodeWhere(placement, event string, props, attrs json.RawMessage) (popup.Where, *Error) {
	q := HomepageQuery{Placement: placement, Event: event}
	var perr *Error
	if q.Props, perr = decodePairs(props, propPrefix, "event_properties"); perr != nil {
		return popup.Where{}, perr
	}
	if q.Attrs, perr = decodePairs(attrs, attrPrefix, "attrs"); perr != nil {
		return popup.Where{}, perr
	}
	return q.Where()
}
