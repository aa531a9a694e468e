// Package httpapi is the HTTP face of popup-api: the public router (homepage decision, actions,
// health) and the admin router (popup CRUD, preview, user state, cache reload, metrics, pprof).
package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/popup"
	"popupsvc/internal/uidauth"
)

// Error is an error the transport owns, with its HTTP status and stable code; domain errors
// carry their code themselves (popup.Code) and get their status from codeStatus.
type Error struct {
	status  int
	code    string
	message string
	fields  []popup.FieldError
	// roleNeeded is set on a 403: the role the refused request needs.
	roleNeeded string
	// extra are more members of the error object (an audience upload's bad lines, say).
	extra gin.H
}

func (e *Error) Error() string { return e.code + ": " + e.message }

func badRequest(code, msg string) *Error {
	return &Error{status: http.StatusBadRequest, code: code, message: msg}
}

var (
	errNotFound    = &Error{status: http.StatusNotFound, code: "not_found", message: "no such route"}
	errTooLarge    = &Error{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "request body over 4 KiB"}
	errUnavailable = &Error{status: http.StatusServiceUnavailable, code: "unavailable", message: "the event queue cannot take the action now; retry later"}
	errRateLimited = &Error{status: http.StatusTooManyRequests, code: "rate_limited", message: "too many actions for this uid; retry later"}
	errAuth        = &Error{status: http.StatusUnauthorized, code: "unauthorized", message: "missing or wrong bearer token"}
	errMySQLDown   = &Error{status: http.StatusServiceUnavailable, code: "mysql_unavailable", message: "the popup store (MySQL) is unavailable; retry later"}
	errInternal    = &Error{status: http.StatusInternalServerError, code: "internal", message: "internal error"}
	// errReservationExpired refuses the confirmation of a decision no longer pending.
	errReservationExpired = &Error{status: http.StatusConflict, code: "reservation_expired",
		message: "no pending reservation of this decision for this uid and popup: it expired or was never made (GET /api/v1/popup?confirm=1); the impression is not counted"}
)

// ErrMySQLUnavailable is what a PopupRepo (or Reload) returns, wrapped or not, while MySQL cannot
// be reached: the admin API answers 503 mysql_unavailable with Retry-After.
var ErrMySQLUnavailable = errors.New("MySQL unavailable")

// mysqlRetryAfter is the Retry-After of a mysql_unavailable answer, in seconds: a MySQL restart
// or failover takes seconds, not one.
const mysqlRetryAfter = 5

// uidSigErrors maps each uid signature failure (POPUP_UID_HMAC_KEYS set) to its 401: three codes,
// with messages that say what to fix. Telling the causes apart helps no forger: without a key
// no header passes.
var uidSigErrors = map[error]*Error{
	uidauth.ErrMissing:   {status: http.StatusUnauthorized, code: "uid_signature_missing", message: "this uid must be vouched for by the gateway: header " + uidauth.Header + " is required"},
	uidauth.ErrMalformed: {status: http.StatusUnauthorized, code: "uid_signature_invalid", message: uidauth.Header + " is malformed: want t=<unix seconds>,v1=<64 hex digits>"},
	uidauth.ErrMismatch:  {status: http.StatusUnauthorized, code: "uid_signature_invalid", message: uidauth.Header + " does not sign this uid and timestamp with a configured key"},
	uidauth.ErrFuture:    {status: http.StatusUnauthorized, code: "uid_signature_invalid", message: uidauth.Header + " timestamp is too far ahead of the server clock"},
	uidauth.ErrExpired:   {status: http.StatusUnauthorized, code: "uid_signature_expired", message: uidauth.Header + " timestamp is older than the accepted max age"},
}

// codeStatus is the status of each domain error's code: the one table a new domain error
// touches, and only when it brings a new code (TestEveryDomainCodeHasAStatus).
var codeStatus = map[popup.Code]int{
	popup.CodePopupNotFound:       http.StatusNotFound,
	popup.CodeRevisionNotKept:     http.StatusNotFound,
	popup.CodeRevisionMismatch:    http.StatusPreconditionFailed,
	popup.CodeValidationFailed:    http.StatusBadRequest,
	popup.CodeForbidden:           http.StatusForbidden,
	popup.CodeNameTaken:           http.StatusConflict,
	popup.CodeExperimentMissing:   http.StatusConflict,
	popup.CodeExperimentConcluded: http.StatusConflict,
	popup.CodeExperimentState:     http.StatusConflict,
	popup.CodeExperimentRunning:   http.StatusConflict,
	popup.CodeExperimentShipped:   http.StatusConflict,
	popup.CodeAudienceNotFound:    http.StatusNotFound,
	popup.CodeAudienceInUse:       http.StatusConflict,
	popup.CodeInvalidMembers:      http.StatusBadRequest,
	popup.CodeTooManyMembers:      http.StatusRequestEntityTooLarge,
	popup.CodeAudienceMemory:      http.StatusRequestEntityTooLarge,
	popup.CodeGoalNotFound:        http.StatusNotFound,
	popup.CodeGoalInUse:           http.StatusConflict,
	popup.CodeIngestKeyNotFound:   http.StatusNotFound,
}

// domainError is an error of the popup domain, named by its stable code: a *popup.Error,
// *popup.ValidationError or *popup.ForbiddenError.
type domainError interface {
	error
	Code() popup.Code
}

// writeError is the one place errors become responses: the transport's own errors as they are,
// domain errors by their code's status (codeStatus), everything else a logged 500.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	ae := answer(err)
	if ae == errInternal {
		log.Error("request failed", "method", c.Request.Method, "path", c.FullPath(), "err", err)
	}
	var fe *popup.ForbiddenError
	if ae.roleNeeded != "" && errors.As(err, &fe) {
		c.Set(forbiddenCtxKey, fe) // logged and counted by the admin router (logRefusal)
	}
	switch {
	case ae == errMySQLDown:
		setExposedHeader(c, "Retry-After", strconv.Itoa(mysqlRetryAfter))
	case ae.status == http.StatusServiceUnavailable:
		setExposedHeader(c, "Retry-After", strconv.Itoa(1))
	case ae.status == http.StatusTooManyRequests:
		setExposedHeader(c, "Retry-After", strconv.Itoa(60))
	}
	body := gin.H{"code": ae.code, "message": ae.message}
	if len(ae.fields) > 0 {
		body["fields"] = fieldErrorsToWire(ae.fields)
	}
	if ae.roleNeeded != "" {
		body["role_needed"] = ae.roleNeeded
	}
	for k, v := range ae.extra {
		body[k] = v
	}
	c.AbortWithStatusJSON(ae.status, gin.H{"error": body})
}

// answer is the answer to err: errInternal for an error neither the transport nor the domain
// names, or a domain code without a status.
func answer(err error) *Error {
	var ae *Error
	var de domainError
	if aa, ok := audienceAnswer(err); ok {
		return aa
	}
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &de):
		return domainAnswer(err, de)
	case errors.Is(err, ErrMySQLUnavailable):
		return errMySQLDown
	}
	return errInternal
}

// domainAnswer is the answer to de, found in err: its code with the code's status, its message
// and the fields at fault. Within an import (a *popup.BatchItemError), the fields a *popup.Error
// names are those of the popup at fault: popups[i].bucket_seed.
func domainAnswer(err error, de domainError) *Error {
	status, ok := codeStatus[de.Code()]
	if !ok {
		return errInternal
	}
	ae := &Error{status: status, code: string(de.Code()), message: de.Error()}
	switch e := de.(type) {
	case *popup.Error:
		prefix := ""
		var item *popup.BatchItemError
		if errors.As(err, &item) {
			prefix = "popups[" + strconv.Itoa(item.Index) + "]."
		}
		ae.message, ae.fields = e.Message(prefix), e.FieldErrors(prefix)
	case *popup.ValidationError:
		ae.fields = e.Fields
	case *popup.ForbiddenError:
		ae.roleNeeded = e.Needed.String()
	}
	return ae
}

// fieldErrorWire is one entry of an error answer's fields: the field's JSON path and the problem.
type fieldErrorWire struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func fieldErrorsToWire(fes []popup.FieldError) []fieldErrorWire {
	out := make([]fieldErrorWire, len(fes))
	for i, fe := range fes {
		out[i] = fieldErrorWire{Field: fe.Field, Message: fe.Message}
	}
	return out
}

// audienceAnswer is the answer to an audience error that carries more than a message.
func audienceAnswer(err error) (*Error, bool) {
	var (
		bad  *popup.InvalidMembersError
		many *popup.TooManyMembersError
		mem  *popup.AudienceMemoryError
		use  *popup.AudienceInUseError
		body *bodyError
	)
	switch {
	case errors.As(err, &bad):
		lines := make([]gin.H, len(bad.Lines))
		for i, l := range bad.Lines {
			lines[i] = gin.H{"line": l.Line, "message": l.Message}
		}
		extra := gin.H{"lines": lines, "bad_lines": bad.Total}
		if bad.Columns != nil {
			extra["columns"] = bad.Columns // a CSV header without the uid column: the columns to choose from
		}
		return &Error{status: codeStatus[bad.Code()], code: string(bad.Code()), message: bad.Message(), extra: extra}, true
	case errors.As(err, &many):
		return &Error{status: codeStatus[many.Code()], code: string(many.Code()),
			message: "more than " + strconv.Itoa(many.Limit) + " distinct uids: the limit of one " + string(many.Action) + " is " + strconv.Itoa(many.Limit),
			extra:   gin.H{"limit": many.Limit}}, true
	case errors.As(err, &mem):
		return &Error{status: codeStatus[mem.Code()], code: string(mem.Code()),
			message: "refused: every audience's members would be " + strconv.FormatInt(mem.Members, 10) + ", whose sets take " +
				strconv.FormatInt(mem.Need, 10) + " bytes in every instance, over POPUP_AUDIENCE_MEMORY (" + strconv.FormatInt(mem.Limit, 10) + " bytes)",
			extra: gin.H{"limit_bytes": mem.Limit, "needed_bytes": mem.Need}}, true
	case errors.As(err, &use):
		popups := make([]gin.H, len(use.Popups))
		for i, p := range use.Popups {
			popups[i] = gin.H{"id": p.ID, "name": p.Name, "status": string(p.Status)}
		}
		return &Error{status: codeStatus[use.Code()], code: string(use.Code()), message: use.Error(), extra: gin.H{"popups": popups}}, true
	case errors.As(err, &body):
		return badRequest("invalid_body", "could not read the request body: "+body.err.Error()), true
	}
	return nil, false
}
