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

// apiError is an error with its HTTP status and stable code.
type apiError struct {
	status  int
	code    string
	message string
	fields  []popup.FieldError
	// roleNeeded is set on a 403: the role the refused request needs.
	roleNeeded string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func badRequest(code, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: msg}
}

var (
	errNotFound    = &apiError{status: http.StatusNotFound, code: "not_found", message: "no such route"}
	errPopupGone   = &apiError{status: http.StatusNotFound, code: "popup_not_found", message: "no such popup"}
	errTooLarge    = &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "request body over 4 KiB"}
	errUnavailable = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "the event queue cannot take the action now; retry later"}
	errRateLimited = &apiError{status: http.StatusTooManyRequests, code: "rate_limited", message: "too many actions for this uid; retry later"}
	errAuth        = &apiError{status: http.StatusUnauthorized, code: "unauthorized", message: "missing or wrong bearer token"}
	errMySQLDown   = &apiError{status: http.StatusServiceUnavailable, code: "mysql_unavailable", message: "the popup store (MySQL) is unavailable; retry later"}
	errStale       = &apiError{status: http.StatusPreconditionFailed, code: "precondition_failed", message: "the popup has changed since it was read: If-Match does not match its current ETag; read it again and reapply the change"}
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
var uidSigErrors = map[error]*apiError{
	uidauth.ErrMissing:   {status: http.StatusUnauthorized, code: "uid_signature_missing", message: "this uid must be vouched for by the gateway: header " + uidauth.Header + " is required"},
	uidauth.ErrMalformed: {status: http.StatusUnauthorized, code: "uid_signature_invalid", message: uidauth.Header + " is malformed: want t=<unix seconds>,v1=<64 hex digits>"},
	uidauth.ErrMismatch:  {status: http.StatusUnauthorized, code: "uid_signature_invalid", message: uidauth.Header + " does not sign this uid and timestamp with a configured key"},
	uidauth.ErrFuture:    {status: http.StatusUnauthorized, code: "uid_signature_invalid", message: uidauth.Header + " timestamp is too far ahead of the server clock"},
	uidauth.ErrExpired:   {status: http.StatusUnauthorized, code: "uid_signature_expired", message: uidauth.Header + " timestamp is older than the accepted max age"},
}

// writeError is the one place errors become responses: known errors by their table entry,
// validation errors with their fields, everything else a logged 500.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	var ae *apiError
	var ve *popup.ValidationError
	var fe *popup.ForbiddenError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &fe):
		ae = &apiError{status: http.StatusForbidden, code: "forbidden", message: fe.Error(), roleNeeded: fe.Needed.String()}
		c.Set(forbiddenCtxKey, fe) // logged and counted by the admin router (logRefusal)
	case errors.As(err, &ve):
		ae = &apiError{status: http.StatusBadRequest, code: "validation_failed", message: ve.Error(), fields: ve.Fields}
	case errors.Is(err, popup.ErrBucketSeedChanged):
		ae = seedChanged(err)
	case errors.Is(err, popup.ErrNotFound):
		ae = errPopupGone
	case errors.Is(err, ErrMySQLUnavailable):
		ae = errMySQLDown
	case errors.Is(err, popup.ErrRevisionMismatch):
		ae = errStale
	case errors.Is(err, popup.ErrNameTaken):
		ae = errNameTaken
	case errors.Is(err, popup.ErrRevisionNotKept):
		ae = errRevisionGone
	case experimentCause(err) != nil:
		ae = experimentConflict(err)
	case errors.Is(err, popup.ErrUnknownVariant):
		ae = &apiError{status: http.StatusBadRequest, code: "validation_failed", message: "variant " + popup.ErrUnknownVariant.Error(),
			fields: []popup.FieldError{{Field: "variant", Message: "must be the key of one of the experiment's variants"}}}
	default:
		log.Error("request failed", "method", c.Request.Method, "path", c.FullPath(), "err", err)
		ae = &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error"}
	}
	switch {
	case ae == errMySQLDown:
		c.Header("Retry-After", strconv.Itoa(mysqlRetryAfter))
	case ae.status == http.StatusServiceUnavailable:
		c.Header("Retry-After", strconv.Itoa(1))
	case ae.status == http.StatusTooManyRequests:
		c.Header("Retry-After", strconv.Itoa(60))
	}
	body := gin.H{"code": ae.code, "message": ae.message}
	if len(ae.fields) > 0 {
		body["fields"] = fieldErrorsToWire(ae.fields)
	}
	if ae.roleNeeded != "" {
		body["role_needed"] = ae.roleNeeded
	}
	c.AbortWithStatusJSON(ae.status, gin.H{"error": body})
}

// seedChanged is the 400 of a write that would change a stored bucket seed, naming the field:
// bucket_seed, or popups[i].bucket_seed for the i-th popup of an import.
func seedChanged(err error) *apiError {
	field := "bucket_seed"
	var item *popup.BatchItemError
	if errors.As(err, &item) {
		field = "popups[" + strconv.Itoa(item.Index) + "].bucket_seed"
	}
	msg := popup.ErrBucketSeedChanged.Error()
	return &apiError{status: http.StatusBadRequest, code: "validation_failed", message: field + " " + msg,
		fields: []popup.FieldError{{Field: field, Message: msg}}}
}

// experimentConflicts are the 409 codes of the experiment's phase and transition rules.
var experimentConflicts = map[error]string{
	popup.ErrExperimentRunning:   "experiment_running",
	popup.ErrExperimentConcluded: "experiment_concluded",
	popup.ErrExperimentMissing:   "experiment_missing",
	popup.ErrExperimentState:     "experiment_state",
}

// experimentCause is the experiment rule err broke, or nil.
func experimentCause(err error) error {
	for cause := range experimentConflicts {
		if errors.Is(err, cause) {
			return cause
		}
	}
	return nil
}

// experimentConflict is the 409 of a write an experiment rule refuses, naming the experiment:
// experiment, or popups[i].experiment for the i-th popup of an import.
func experimentConflict(err error) *apiError {
	cause := experimentCause(err)
	field := "experiment"
	var item *popup.BatchItemError
	if errors.As(err, &item) {
		field = "popups[" + strconv.Itoa(item.Index) + "].experiment"
	}
	return &apiError{status: http.StatusConflict, code: experimentConflicts[cause], message: field + ": " + cause.Error(),
		fields: []popup.FieldError{{Field: field, Message: cause.Error()}}}
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
