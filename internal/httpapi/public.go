package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/cors"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/reqparse"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/uidauth"
)

// UserStates is the user-state store the admin's user-state view reads (decide.UserStates).
type UserStates = decide.UserStates

// Public serves the public listener.
type Public struct {
	Snapshots *snapshot.Holder
	// Decider makes the homepage decisions and records the actions.
	Decider *decide.Decider
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *Metrics
	// UIDAuth, when set, requires the gateway's signature of the uid on every request that names
	// one (POPUP_UID_HMAC_KEYS, docs/SECURITY.md); nil trusts the uid as sent.
	UIDAuth *uidauth.Verifier
	// AudiencesSettled, when set, is closed once the audiences the active popups target are
	// loaded or POPUP_AUDIENCE_LOAD_TIMEOUT has passed: until then /readyz answers 503.
	AudiencesSettled <-chan struct{}
	// CORS, when it allows any origin (POPUP_CORS_ORIGINS), lets those web pages call the
	// decision and the actions from a browser (corsPolicy); empty, no CORS middleware is mounted.
	CORS cors.Origins
	// IngestKeys, when set, checks an ingest key (Authorization: Bearer) that vouches for
	// conversions carrying a value; nil: only uid signatures can (docs/CONTRACT.md §14).
	IngestKeys IngestKeyChecker

	nullAnswer atomic.Pointer[nullAnswer]
}

// maxActionBody is the action body limit (4 KiB, docs/CONTRACT.md).
const maxActionBody = 4 << 10

// maxDecisionBody is the limit of POST /api/v1/decisions' body (32 KiB, docs/CONTRACT.md): room
// for every attribute and event property at its limits.
const maxDecisionBody = 32 << 10

// errDecisionTooLarge refuses a decision body over maxDecisionBody.
var errDecisionTooLarge = &Error{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "request body over 32 KiB"}

// Router builds the public router: nothing admin-ish is mounted here.
func (p *Public) Router() *gin.Engine {
	r := newEngine(p.Log)
	if p.Metrics != nil {
		r.Use(p.Metrics.observe)
	}
	if p.CORS.Enabled() {
		r.Use(newCORSPolicy(p.CORS).handle)
	}
	r.GET("/api/v1/popup", p.getPopup)
	r.POST("/api/v1/decisions", p.postDecision)
	r.POST("/api/v1/popups/:id/actions", p.postAction)
	r.POST("/api/v1/conversions", p.postConversion)
	r.POST("/api/v1/conversions/batch", p.postConversionBatch)
	healthz := func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }
	r.GET("/healthz", healthz)
	r.HEAD("/healthz", healthz) // net/http drops the body of a HEAD answer
	r.GET("/readyz", p.readyz)
	r.HEAD("/readyz", p.readyz)
	return r
}

// readyz is the readiness rule: 200 once a config snapshot is loaded (from the Redis cache or
// from MySQL) and the audiences its active popups target are loaded (or the wait for them timed
// out), 503 only before that and while shutting down. It never follows the health of
// Redis or MySQL after start: with a snapshot, every homepage call gets an answer (a degraded
// one while Redis is down), and failing readiness in an outage would only take every instance
// out of the load balancer at once. Dependency health is the popup_dependency_up gauge.
func (p *Public) readyz(c *gin.Context) {
	if draining(c.Request.Context()) {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not_ready", "reason": "shutting down"})
		return
	}
	if reason := p.notReady(); reason != "" {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not_ready", "reason": reason})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "config_version": p.Snapshots.Load().Version})
}

// Ready reports readyz's rule but for the drain at shutdown (popup_ready, which the alert rules
// watch): a config snapshot is loaded and the audiences it targets are loaded or waited for.
func (p *Public) Ready() bool { return p.notReady() == "" }

// notReady is why the instance is not ready (draining aside), or "".
func (p *Public) notReady() string {
	if p.Snapshots.Load() == nil {
		return "no config snapshot loaded"
	}
	if p.AudiencesSettled != nil {
		select {
		case <-p.AudiencesSettled:
		default:
			return "loading the audiences the active popups target"
		}
	}
	return ""
}

var (
	nullHead      = []byte(`{"popup":null,"config_version":`)
	popupHead     = []byte(`{"popup":`)
	decisionHead  = []byte(`,"decision_id":"`)
	localeHead    = []byte(`","locale":"`)
	variantHead   = []byte(`","variant":"`)
	versionHead   = []byte(`","config_version":`)
	degradedBody  = []byte(`{"popup":null}`)
	acceptedBody  = []byte(`{"status":"accepted"}`)
	contentTypeJS = "application/json; charset=utf-8"
)

func (p *Public) getPopup(c *gin.Context) {
	q, perr := reqparse.ScanQuery(c.Request.URL.RawQuery)
	if perr != nil {
		q.Release()
		writeError(c, p.Log, parseError(perr))
		return
	}
	p.decision(c, &q)
	q.Release() // the answer is written: nothing reads the attributes any more
}

// postDecision is GET /api/v1/popup's twin for a JSON body (attributes with types, more of them
// than a URL comfortably holds): the same fields, the same checks, the same answer, byte for byte.
func (p *Public) postDecision(c *gin.Context) {
	raw, aerr := readBody(c, maxDecisionBody, errDecisionTooLarge)
	if aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	q, perr := reqparse.DecodeDecisionBody(raw)
	if perr != nil {
		writeError(c, p.Log, parseError(perr))
		return
	}
	p.decision(c, &q)
}

// decision answers the homepage query q, however it came.
func (p *Public) decision(c *gin.Context, q *reqparse.HomepageQuery) {
	req, aerr := parseRequest(q.UID, q.Platform, q.AppVersion, q.Region, q.Lang)
	if aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	var perr *reqparse.Error
	if req.Where, perr = q.Where(); perr != nil {
		writeError(c, p.Log, parseError(perr))
		return
	}
	now := p.Now()
	if aerr := p.checkUID(c, req.UID, now); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	confirm, perr := reqparse.ParseConfirm(q.Confirm)
	if perr != nil {
		writeError(c, p.Log, parseError(perr))
		return
	}
	var ans decide.Answer
	if confirm {
		ans = p.Decider.Reserve(c.Request.Context(), req, now)
	} else {
		ans = p.Decider.Decide(c.Request.Context(), req, now)
	}
	switch ans.Kind {
	case decide.Shown:
		answerPopup(c, &ans)
	case decide.None:
		p.answerNull(c, ans.Version)
	case decide.Degraded:
		setExposedHeader(c, "X-Popup-Degraded", "1")
		writeBody(c, http.StatusOK, degradedBody)
	case decide.ClientGone:
		// Nobody reads an answer.
	}
}

// checkUID demands the gateway's signature of uid when POPUP_UID_HMAC_KEYS is set: after the
// request's own validation, before any store is touched. Without keys it lets every uid through.
func (p *Public) checkUID(c *gin.Context, uid string, now time.Time) *Error {
	if p.UIDAuth == nil {
		return nil
	}
	var err error
	switch vs := c.Request.Header[uidauth.Header]; len(vs) {
	case 0:
		err = uidauth.ErrMissing
	case 1:
		err = p.UIDAuth.Verify(vs[0], uid, now)
	default:
		err = uidauth.ErrMalformed // two signatures: which one would the gateway mean?
	}
	if err == nil {
		return nil
	}
	c.Header("WWW-Authenticate", uidSigChallenge)
	if ae := uidSigErrors[err]; ae != nil {
		return ae
	}
	return uidSigErrors[uidauth.ErrMismatch]
}

// uidSigChallenge names the scheme on a 401 (RFC 9110 §11.6.1 wants a challenge on every 401).
const uidSigChallenge = `PopupUidSig realm="popup", header="` + uidauth.Header + `"`

// answerNull writes "no popup" for config version. The body is made once per version and
// shared: the steady-state answer allocates nothing.
func (p *Public) answerNull(c *gin.Context, version int64) {
	a := p.nullAnswer.Load()
	if a == nil || a.version != version {
		body := append([]byte(nil), nullHead...)
		body = strconv.AppendInt(body, version, 10)
		a = &nullAnswer{version: version, body: append(body, '}')}
		p.nullAnswer.Store(a)
	}
	writeBody(c, http.StatusOK, a.body)
}

// nullAnswer is the "no popup" body of one config version.
type nullAnswer struct {
	version int64
	body    []byte
}

// contentTypeHeader is shared by every answer: net/http only reads it, and its capacity of one
// makes an append elsewhere copy rather than write into it.
var contentTypeHeader = []string{contentTypeJS}

// writeBody writes a prepared JSON body without Gin's renderer, which allocates per answer.
func writeBody(c *gin.Context, status int, body []byte) {
	c.Writer.Header()["Content-Type"] = contentTypeHeader
	c.Writer.WriteHeader(status)
	_, _ = c.Writer.Write(body) // a write error means the client has gone: nobody to tell
}

// answerPopup writes a Shown answer: the popup's (or its experiment variant's) public JSON, the
// decision id, the locale shown (docs/CONTRACT.md §13), the variant's key when there is one
// (§10), the config version.
func answerPopup(c *gin.Context, a *decide.Answer) {
	out := make([]byte, 0, len(a.Body)+96+len(a.Locale)+len(a.Variant))
	out = append(out, popupHead...)
	out = append(out, a.Body...)
	out = append(out, decisionHead...)
	out = append(out, a.DecisionID...)
	out = append(out, localeHead...)
	out = append(out, a.Locale...) // a tag or "default": [A-Za-z0-9-], nothing to escape
	if a.Variant != "" {
		out = append(out, variantHead...)
		out = append(out, a.Variant...) // a key is [a-z0-9_-]: nothing to escape
	}
	out = append(out, versionHead...)
	out = strconv.AppendInt(out, a.Version, 10)
	out = append(out, '}')
	writeBody(c, http.StatusOK, out)
}

func (p *Public) postAction(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(c, p.Log, badRequest("invalid_popup_id", "popup id must be a positive integer"))
		return
	}
	body, aerr := readActionBody(c)
	if aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	now := p.Now()
	if aerr := p.checkUID(c, body.UID, now); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	if event.Action(body.Action) == event.Impression {
		// The confirmation of a decision made with confirm=1: the decision id is its key.
		err = p.Decider.Confirm(c.Request.Context(), body.UID, id, body.DecisionID, now)
	} else {
		err = p.Decider.Act(c.Request.Context(), decide.Report{UID: body.UID, PopupID: id, Kind: event.Action(body.Action),
			EventID: body.EventID, DecisionID: body.DecisionID, Button: body.Button}, now)
	}
	switch {
	case err == nil:
		writeBody(c, http.StatusAccepted, acceptedBody)
	case errors.Is(err, decide.ErrClientGone):
		// Nobody reads an answer.
	default:
		writeError(c, p.Log, decisionError(err))
	}
}

// decisionError maps the decide package's errors to their answers.
func decisionError(err error) error {
	switch {
	case errors.Is(err, decide.ErrRateLimited):
		return errRateLimited
	case errors.Is(err, decide.ErrUnavailable):
		return errUnavailable
	case errors.Is(err, decide.ErrExpired):
		return errReservationExpired
	}
	var be *decide.ButtonError
	if errors.As(err, &be) {
		return &Error{status: http.StatusBadRequest, code: "invalid_button", message: be.Error(),
			fields: []popup.FieldError{{Field: "button", Message: be.Error()}}}
	}
	return err // popup.ErrNotFound and anything unexpected: writeError's table
}

// readActionBody reads and validates the body of POST /api/v1/popups/{id}/actions.
func readActionBody(c *gin.Context) (reqparse.ActionBody, *Error) {
	var b reqparse.ActionBody
	if c.Request.ContentLength > maxActionBody {
		return b, errTooLarge
	}
	raw, aerr := readBody(c, maxActionBody, errTooLarge)
	if aerr != nil {
		return b, aerr
	}
	b, perr := reqparse.DecodeActionBody(raw)
	if perr != nil {
		return b, parseError(perr)
	}
	return b, nil
}

// readBody reads the request body up to limit bytes: tooLarge (a 413) past it, a 400
// invalid_body when it cannot be read.
func readBody(c *gin.Context, limit int64, tooLarge *Error) ([]byte, *Error) {
	if c.Request.ContentLength > limit {
		// Declared too large: refused before a byte is read (reading it would only run into the
		// listener's read timeout and end as a 400).
		return nil, tooLarge
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, badRequest("invalid_body", "could not read the request body")
	}
	return raw, nil
}

// newEngine is a bare Gin engine with JSON answers for panics, unknown routes and methods; no
// per-request logging.
func newEngine(log *slog.Logger) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, rec any) {
		// The route, not the path: an admin path may name a uid, which no log prints.
		log.Error("panic", "route", c.FullPath(), "panic", rec)
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": gin.H{"code": "internal", "message": "internal error"}})
	}))
	r.NoRoute(func(c *gin.Context) { writeError(c, log, errNotFound) })
	r.NoMethod(func(c *gin.Context) {
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, gin.H{"error": gin.H{"code": "method_not_allowed", "message": "method not allowed on this route"}})
	})
	return r
}
