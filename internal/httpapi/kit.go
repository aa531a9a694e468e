package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/popup"
	"popupsvc/internal/reqparse"
)

// The admin kit: what every admin slice (internal/admin/...) shares with the shell and with
// the public API — the error answers, the body and query readers, the operator of a request and
// the role guards. It changes rarely; a slice's own routes, ports and wire types live with the
// slice.

// Slice is one admin feature: it registers its routes on the /admin/v1 group, each with the
// role guard it needs (auth has already run).
type Slice interface {
	Register(g *gin.RouterGroup)
}

// Shared is what the shell gives every slice: the logger, the clock and the propagation of a
// committed config change to every instance.
type Shared struct {
	Log *slog.Logger
	Now func() time.Time
	// Reload rebuilds the Redis cache from MySQL, announces it to every instance and refreshes
	// this one; it returns the version now served.
	Reload func(ctx context.Context) (int64, error)
}

// Fail answers err through the error table (WriteError).
func (s *Shared) Fail(c *gin.Context, err error) { writeError(c, s.Log, err) }

// Propagate pushes a committed change to Redis and every instance. MySQL already holds the
// change, so a failure here is logged, not returned: the worker's periodic warm-up and every
// instance's poll will still pick it up.
func (s *Shared) Propagate(ctx context.Context) {
	if s.Reload == nil {
		return
	}
	if _, err := s.Reload(ctx); err != nil {
		s.Log.Warn("config change saved but not yet propagated", "err", err)
	}
}

// Require is the guard of a route that needs role need whatever its request: it answers 403
// (what needs the role, the operator's role) to an operator whose role is below it. Routes whose
// rights depend on the request and the stored popup (popup writes, import) are checked again in
// the write (internal/manage), where the stored popup is read (popup.Write.Needs).
func (s *Shared) Require(need popup.Role, what string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := Actor(c).Need(need, what); err != nil {
			writeError(c, s.Log, err)
		}
	}
}

// Problem describes an error the transport owns, for NewError.
type Problem struct {
	Status  int
	Code    string
	Message string
	Fields  []popup.FieldError
	// Extra are more members of the error object (an audience upload's bad lines, say).
	Extra gin.H
}

// NewError is the transport error p describes.
func NewError(p Problem) *Error {
	return &Error{status: p.Status, code: p.Code, message: p.Message, fields: p.Fields, extra: p.Extra}
}

// Status is the HTTP status of the answer.
func (e *Error) Status() int { return e.status }

// ErrCode is the answer's stable code.
func (e *Error) ErrCode() string { return e.code }

// Message is the answer's message.
func (e *Error) Message() string { return e.message }

// Fields are the fields at fault.
func (e *Error) Fields() []popup.FieldError { return e.fields }

// WriteError is the one place errors become responses (writeError).
func WriteError(c *gin.Context, log *slog.Logger, err error) { writeError(c, log, err) }

// BadRequest is a 400 with code and msg.
func BadRequest(code, msg string) *Error { return badRequest(code, msg) }

// MaxActionBody bounds the small JSON bodies (an action, a setting, an ingest key's name).
const MaxActionBody = maxActionBody

// ErrTooLarge is the 413 of a body over MaxActionBody.
var ErrTooLarge = errTooLarge

// ErrUIDMalformed answers a uid that is present but not well formed, wherever a uid is read.
var ErrUIDMalformed = errUIDMalformed

// ReadBody reads the request body up to limit bytes: tooLarge (a 413) past it, a 400
// invalid_body when it cannot be read.
func ReadBody(c *gin.Context, limit int64, tooLarge *Error) ([]byte, *Error) {
	return readBody(c, limit, tooLarge)
}

// ParseFlag reads a boolean query parameter (parseFlag).
func ParseFlag(name, v string) (bool, *Error) { return parseFlag(name, v) }

// ParseRequest validates a decision request's fields as the homepage does (parseRequest).
func ParseRequest(uid, platform, appVersion, region, lang string) (popup.Request, *Error) {
	return parseRequest(uid, platform, appVersion, region, lang)
}

// ParseWhere reads the placement, event, prop.<key> and attr.<key> parameters of a raw query
// (the admin preview's, as GET /api/v1/popup has them), with the public API's limits and 400s.
func ParseWhere(rawQuery string) (popup.Where, *Error) {
	q, perr := reqparse.ScanQuery(rawQuery)
	if perr != nil {
		return popup.Where{}, parseError(perr)
	}
	w, perr := q.Where()
	if perr != nil {
		return popup.Where{}, parseError(perr)
	}
	return w, nil
}

// DecodeWhere is ParseWhere for a JSON body's fields (reqparse.DecodeWhere).
func DecodeWhere(placement, event string, props, attrs json.RawMessage) (popup.Where, *Error) {
	w, perr := reqparse.DecodeWhere(placement, event, props, attrs)
	if perr != nil {
		return popup.Where{}, parseError(perr)
	}
	return w, nil
}

// QueryError is the 400 of a bad query parameter, naming it.
func QueryError(name, msg string) *Error {
	return &Error{status: http.StatusBadRequest, code: "invalid_query", message: name + " " + msg,
		fields: []popup.FieldError{{Field: name, Message: msg}}}
}

func queryError(name, msg string) *Error { return QueryError(name, msg) }

// PositiveParam reads an optional positive integer query parameter: 0 when absent.
func PositiveParam(c *gin.Context, name string) (int64, *Error) {
	v, ok := c.GetQuery(name)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, QueryError(name, "must be a positive integer")
	}
	return n, nil
}

// LimitParam reads limit: def when absent, 1 to max.
func LimitParam(c *gin.Context, def, max int) (int, *Error) {
	n, aerr := PositiveParam(c, "limit")
	switch {
	case aerr != nil || n > int64(max):
		return 0, QueryError("limit", "must be an integer from 1 to "+strconv.Itoa(max))
	case n == 0:
		return def, nil
	}
	return int(n), nil
}

// NextPage cuts rows, read with one row more than limit, to the page and the cursor of the next
// page: the id of its last row, or nil when there is no next page.
func NextPage[T any](rows []T, limit int, id func(T) int64) ([]T, *string) {
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	s := strconv.FormatInt(id(rows[limit-1]), 10)
	return rows, &s
}

// ReadSmallJSON reads a body of at most limit bytes into dst: exactly one JSON object of dst's
// known fields, a 400 naming the field of a wrong type.
func ReadSmallJSON(c *gin.Context, limit int64, dst any) *Error {
	raw, aerr := readBody(c, limit, &Error{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "request body over " + strconv.FormatInt(limit, 10) + " bytes"})
	if aerr != nil {
		return aerr
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &Error{status: http.StatusBadRequest, code: "invalid_json", message: te.Field + " must be " + JSONKind(te.Type),
				fields: []popup.FieldError{{Field: te.Field, Message: TypeMismatch(te)}}}
		}
		return badRequest("invalid_json", "body is not the expected JSON object: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return badRequest("invalid_json", "body must hold exactly one JSON object")
	}
	return nil
}

func readSmallJSON(c *gin.Context, limit int64, dst any) *Error { return ReadSmallJSON(c, limit, dst) }

// TypeMismatch says what a JSON value of the wrong type should have been, and what it was.
func TypeMismatch(te *json.UnmarshalTypeError) string {
	return "must be " + JSONKind(te.Type) + ", not " + te.Value
}

// JSONKind names what a Go type expects in JSON, for an error message.
func JSONKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer in range"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	}
	return "a " + t.Kind().String()
}

// PopupID is the path's popup {id}.
func PopupID(c *gin.Context) (int64, *Error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("invalid_popup_id", "popup id must be a positive integer")
	}
	return id, nil
}

// ETag is a revision or version as an entity tag.
func ETag(revision int64) string { return `"` + strconv.FormatInt(revision, 10) + `"` }

// IfMatch reads the If-Match header: nil when there is none or it is "*" (write whatever the
// revision), else the revisions its strong entity tags name. A tag this API never issued (a weak
// one, which a write's strong comparison never matches, or a foreign one) adds nothing, so a
// header of only such tags gives an empty list, which no revision matches.
func IfMatch(c *gin.Context) []int64 {
	values := c.Request.Header.Values("If-Match")
	if len(values) == 0 {
		return nil
	}
	revs := []int64{}
	for _, v := range values {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" {
				return nil
			}
			if len(tag) < 3 || tag[0] != '"' || tag[len(tag)-1] != '"' {
				continue
			}
			if n, err := strconv.ParseInt(tag[1:len(tag)-1], 10, 64); err == nil && n > 0 {
				revs = append(revs, n)
			}
		}
	}
	return revs
}

// TimePtr is t, or nil (JSON null) for the zero time.
func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// LoadZone loads an IANA time zone name; msg says what is wrong otherwise. "" and "Local", which
// time.LoadLocation takes for UTC and the server's own zone, are not names.
func LoadZone(name string) (loc *time.Location, msg string) {
	if name == "" || name == "Local" || len(name) > 64 {
		return nil, "must be an IANA time zone name like UTC or America/Los_Angeles"
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, "must be an IANA time zone name like UTC or America/Los_Angeles; " + name + " is not one"
	}
	return loc, ""
}

// BodyReader reads an upload's body: a failure to read it (not its end) is answered as a 400
// invalid_body by the error table.
func BodyReader(r io.Reader) io.Reader { return bodyReader{r: r} }

type bodyError struct{ err error }

func (e *bodyError) Error() string { return "read the request body: " + e.err.Error() }

type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = &bodyError{err: err}
	}
	return n, err
}
