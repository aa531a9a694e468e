package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/uidauth"
)

// Conversions on the public listener (docs/CONTRACT.md §14): POST /api/v1/conversions (one, from
// the app, its uid signed in the header like an action's) and POST /api/v1/conversions/batch (up
// to MaxConversionBatch, from a backend; each carries its own uid signature when signatures are
// required). A batch is checked whole before anything is queued: one bad conversion refuses it
// with a 400 naming the field (conversions[3].goal).

// MaxConversionBatch is the most conversions one batch holds.
const MaxConversionBatch = 500

// maxBatchBody bounds a batch's body: 500 conversions of about 300 bytes each, with room.
const maxBatchBody = 256 << 10

// conversionSkew is how far after the server's clock a conversion's at may be (clock skew): such
// an at counts as now.
const conversionSkew = time.Minute

// IngestKeyChecker reports whether hash is the hash of an active ingest key
// (mysqlstore.IngestKeyRepo); an error is a 503 (ErrMySQLUnavailable) or a 500.
type IngestKeyChecker interface {
	ActiveIngestKey(ctx context.Context, hash [32]byte) (bool, error)
}

// ingestChallenge is the WWW-Authenticate of an ingest key's 401.
const ingestChallenge = `Bearer realm="popup-ingest"`

var (
	errConversionMediaType = &Error{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
		message: "conversions are application/json (Content-Type: application/json)"}
	errIngestKeyInvalid = &Error{status: http.StatusUnauthorized, code: "invalid_ingest_key",
		message: "the bearer token is not an active ingest key (revoked, or never created: POST /admin/v1/ingest-keys)"}
)

// checkJSON refuses a conversion body that is not application/json: a text/plain one would pass a
// browser without a preflight, so a page of any origin could post it.
func checkJSON(c *gin.Context) *Error {
	if c.ContentType() != "application/json" {
		return errConversionMediaType
	}
	return nil
}

// checkValues vouches for the values of a request's conversions (docs/CONTRACT.md §14): a bearer
// token sent must be an active ingest key, whatever the conversions carry; without one, a value
// is accepted only when uid signatures are required (the gateway vouches for the request, checked
// per conversion). valued is the field of the first conversion with a value ("" for none).
func (p *Public) checkValues(c *gin.Context, valued string) *Error {
	if tok, ok := bearer(c); ok {
		if p.IngestKeys == nil || !popup.LooksLikeIngestKey(tok) {
			c.Header("WWW-Authenticate", ingestChallenge+`, error="invalid_token"`)
			return errIngestKeyInvalid
		}
		active, err := p.IngestKeys.ActiveIngestKey(c.Request.Context(), popup.HashIngestKey(tok))
		switch {
		case errors.Is(err, ErrMySQLUnavailable):
			return errMySQLDown
		case err != nil:
			p.Log.Error("check ingest key", "err", err)
			return errInternal
		case !active:
			c.Header("WWW-Authenticate", ingestChallenge+`, error="invalid_token"`)
			return errIngestKeyInvalid
		}
		return nil
	}
	if valued == "" || p.UIDAuth != nil {
		return nil
	}
	c.Header("WWW-Authenticate", ingestChallenge)
	msg := "a conversion with a value needs an ingest key (Authorization: Bearer <key>; an admin creates one with POST /admin/v1/ingest-keys) or uid signatures (POPUP_UID_HMAC_KEYS); without either, leave value out"
	return &Error{status: http.StatusUnauthorized, code: "ingest_key_required", message: valued + ": " + msg,
		fields: []popup.FieldError{{Field: valued, Message: msg}}}
}

// batchIndex is the index a batch's field names (conversions[12].goal: 12), -1 for none.
func batchIndex(field string) int {
	rest, ok := strings.CutPrefix(field, "conversions[")
	if !ok {
		return -1
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return -1
	}
	i, err := strconv.Atoi(rest[:end])
	if err != nil {
		return -1
	}
	return i
}

// bearer is the token of an Authorization: Bearer header.
func bearer(c *gin.Context) (string, bool) {
	h := c.GetHeader("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return "", h != ""
	}
	return strings.TrimSpace(h[7:]), true
}

// conversionWire is one conversion as sent.
type conversionWire struct {
	UID     *string  `json:"uid"`
	Goal    *string  `json:"goal"`
	EventID *string  `json:"event_id"`
	Value   *float64 `json:"value"`
	At      *string  `json:"at"`
	// UIDSig is a batch conversion's uid signature (the header's value for this uid), required
	// when POPUP_UID_HMAC_KEYS is set; a single conversion's is the header.
	UIDSig *string `json:"uid_sig"`
}

// conversion checks w and returns it as queued, at now; prefix leads every field an error names
// ("" for a single conversion, "conversions[3]." in a batch).
func (w *conversionWire) conversion(prefix string, now time.Time) (decide.Conversion, []popup.FieldError) {
	var (
		c      = decide.Conversion{At: now}
		fields []popup.FieldError
	)
	bad := func(field, msg string) {
		fields = append(fields, popup.FieldError{Field: prefix + field, Message: msg})
	}
	switch {
	case w.UID == nil:
		bad("uid", "is required")
	case !popup.ValidUID(*w.UID):
		bad("uid", "must be "+popup.UIDRule)
	default:
		c.UID = *w.UID
	}
	switch {
	case w.Goal == nil:
		bad("goal", "is required")
	case !popup.ValidGoalKey(*w.Goal):
		bad("goal", "must be a goal's key: "+popup.GoalKeyRule)
	default:
		c.Goal = *w.Goal
	}
	switch {
	case w.EventID == nil:
		bad("event_id", "is required: the idempotency key of the conversion for its uid")
	case !popup.ValidUID(*w.EventID):
		bad("event_id", "must be "+popup.UIDRule)
	default:
		c.EventID = *w.EventID
	}
	if w.Value != nil {
		if v := *w.Value; math.IsNaN(v) || math.Abs(v) > popup.MaxConversionValue {
			bad("value", "must be a number from -1e12 to 1e12")
		} else {
			c.Value = v
		}
	}
	if w.At != nil {
		at, err := time.Parse(time.RFC3339Nano, *w.At)
		switch {
		case err != nil:
			bad("at", "must be an RFC 3339 time like 2026-11-27T10:00:00Z")
		case at.After(now.Add(conversionSkew)):
			bad("at", "must not be in the future")
		case at.Before(now.Add(-decide.MaxConversionAge)):
			bad("at", "must be at most 7 days in the past")
		case at.Before(now):
			c.At = at.UTC().Truncate(time.Millisecond)
		}
	}
	return c, fields
}

func (p *Public) postConversion(c *gin.Context) {
	if aerr := checkJSON(c); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	var w conversionWire
	if aerr := readSmallJSON(c, maxActionBody, &w); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	now := p.Now()
	conv, fields := w.conversion("", now)
	if w.UIDSig != nil {
		fields = append(fields, popup.FieldError{Field: "uid_sig", Message: "is a batch conversion's; a single conversion's signature is the " + uidauth.Header + " header"})
	}
	if len(fields) > 0 {
		writeError(c, p.Log, &popup.ValidationError{Of: "conversion", Fields: fields})
		return
	}
	valued := ""
	if w.Value != nil {
		valued = "value"
	}
	if aerr := p.checkValues(c, valued); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	if aerr := p.checkUID(c, conv.UID, now); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	p.convert(c, []decide.Conversion{conv}, "", now)
}

// maxBatchProblems is the most problems a batch's 400 lists (its message gives the count).
const maxBatchProblems = 100

// fields maps every key a conversion may hold to where it is decoded (DecodeFields).
func (w *conversionWire) fields() []InputField {
	return []InputField{{Key: "uid", Dst: &w.UID}, {Key: "goal", Dst: &w.Goal}, {Key: "event_id", Dst: &w.EventID},
		{Key: "value", Dst: &w.Value}, {Key: "at", Dst: &w.At}, {Key: "uid_sig", Dst: &w.UIDSig}}
}

// batchError is the 400 of a batch's problems: every one, by index and field, up to
// maxBatchProblems (the message says how many there are in all).
func batchError(code string, fields []popup.FieldError) *Error {
	n := len(fields)
	msg := strconv.Itoa(n) + " problem(s), nothing queued; first: " + fields[0].Field + " " + fields[0].Message
	if n > maxBatchProblems {
		fields = fields[:maxBatchProblems]
		msg += " (the first " + strconv.Itoa(maxBatchProblems) + " are listed)"
	}
	return &Error{status: http.StatusBadRequest, code: code, message: msg, fields: fields}
}

func (p *Public) postConversionBatch(c *gin.Context) {
	if aerr := checkJSON(c); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	var body struct {
		Conversions []json.RawMessage `json:"conversions"`
	}
	if aerr := readSmallJSON(c, maxBatchBody, &body); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	// Each conversion is decoded on its own, so that a value of the wrong type or an unknown
	// field is named with its index, and every one of them at once.
	var in struct{ Conversions []conversionWire }
	in.Conversions = make([]conversionWire, len(body.Conversions))
	var decodeFes []popup.FieldError
	for i, raw := range body.Conversions {
		decodeFes = append(decodeFes, DecodeObject(raw, "conversions["+strconv.Itoa(i)+"]", "a conversion", in.Conversions[i].fields())...)
	}
	switch n := len(in.Conversions); {
	case n == 0:
		writeError(c, p.Log, &popup.ValidationError{Of: "conversions", Fields: []popup.FieldError{{Field: "conversions", Message: "must hold 1 to " + strconv.Itoa(MaxConversionBatch) + " conversions"}}})
		return
	case n > MaxConversionBatch:
		writeError(c, p.Log, &popup.ValidationError{Of: "conversions", Fields: []popup.FieldError{{Field: "conversions", Message: "must hold at most " + strconv.Itoa(MaxConversionBatch) + " conversions, not " + strconv.Itoa(n)}}})
		return
	}
	now := p.Now()
	convs := make([]decide.Conversion, len(in.Conversions))
	var fields []popup.FieldError
	for i := range in.Conversions {
		prefix := "conversions[" + strconv.Itoa(i) + "]."
		var fes []popup.FieldError
		convs[i], fes = in.Conversions[i].conversion(prefix, now)
		for _, fe := range fes {
			// a field that did not decode is named once, by its decoding error
			if !slices.ContainsFunc(decodeFes, func(d popup.FieldError) bool {
				return d.Field == fe.Field || strings.HasPrefix(fe.Field, d.Field+".") || d.Field == strings.TrimSuffix(prefix, ".")
			}) {
				fields = append(fields, fe)
			}
		}
	}
	fields = append(decodeFes, fields...)
	slices.SortStableFunc(fields, func(a, b popup.FieldError) int { return cmp.Compare(batchIndex(a.Field), batchIndex(b.Field)) })
	if len(fields) > 0 {
		writeError(c, p.Log, batchError("validation_failed", fields))
		return
	}
	valued := ""
	for i := range in.Conversions {
		if in.Conversions[i].Value != nil {
			valued = "conversions[" + strconv.Itoa(i) + "].value"
			break
		}
	}
	if aerr := p.checkValues(c, valued); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	if p.UIDAuth != nil {
		for i := range in.Conversions {
			if aerr := p.checkBatchUID(c, in.Conversions[i].UIDSig, convs[i].UID, i, now); aerr != nil {
				writeError(c, p.Log, aerr)
				return
			}
		}
	}
	p.convert(c, convs, "conversions[", now)
}

// checkBatchUID checks the uid signature of a batch's conversion i: as the header of a single
// request would, the field named.
func (p *Public) checkBatchUID(c *gin.Context, sig *string, uid string, i int, now time.Time) *Error {
	err := uidauth.ErrMissing
	if sig != nil {
		err = p.UIDAuth.Verify(*sig, uid, now)
	}
	if err == nil {
		return nil
	}
	c.Header("WWW-Authenticate", uidSigChallenge)
	base := uidSigErrors[err]
	if base == nil {
		base = uidSigErrors[uidauth.ErrMismatch]
	}
	field := "conversions[" + strconv.Itoa(i) + "].uid_sig"
	return &Error{status: base.status, code: base.code, message: field + ": " + base.message,
		fields: []popup.FieldError{{Field: field, Message: base.message}}}
}

// convert queues convs and answers: 202 once every one is durably queued. batch is the prefix of a
// batch's fields ("conversions["), "" for a single conversion.
func (p *Public) convert(c *gin.Context, convs []decide.Conversion, batch string, now time.Time) {
	err := p.Decider.Convert(c.Request.Context(), convs, now)
	var ue *decide.UnknownGoalError
	var rl *decide.RateLimitedError
	switch {
	case err == nil:
		writeBody(c, http.StatusAccepted, acceptedBody)
	case errors.Is(err, decide.ErrClientGone):
		// Nobody reads an answer.
	case errors.As(err, &rl) && batch != "":
		fields := make([]popup.FieldError, len(rl.Indexes))
		for i, idx := range rl.Indexes {
			fields[i] = popup.FieldError{Field: batch + strconv.Itoa(idx) + "].uid",
				Message: "uid " + convs[idx].UID + " is over its rate limit (POPUP_ACTION_RATE_LIMIT): not queued; send it again after Retry-After"}
		}
		if len(fields) > maxBatchProblems {
			fields = fields[:maxBatchProblems]
		}
		writeError(c, p.Log, &Error{status: http.StatusTooManyRequests, code: "rate_limited",
			message: strconv.Itoa(len(rl.Indexes)) + " of " + strconv.Itoa(len(convs)) + " conversion(s) not queued: their uids are over the rate limit (named in fields); every other conversion of the batch was queued",
			fields:  fields})
	case errors.As(err, &ue) && batch != "":
		fields := make([]popup.FieldError, len(ue.All))
		for i, u := range ue.All {
			fields[i] = popup.FieldError{Field: batch + strconv.Itoa(u.Index) + "].goal", Message: "goal " + u.Goal + " does not exist (GET /admin/v1/goals lists them)"}
		}
		writeError(c, p.Log, batchError("unknown_goal", fields))
	case errors.As(err, &ue):
		writeError(c, p.Log, &Error{status: http.StatusBadRequest, code: "unknown_goal", message: "goal: " + ue.Error(),
			fields: []popup.FieldError{{Field: "goal", Message: ue.Error() + " (GET /admin/v1/goals lists them)"}}})
	default:
		writeError(c, p.Log, decisionError(err))
	}
}
