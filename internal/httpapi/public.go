package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/breaker"
	"popupsvc/internal/event"
	"popupsvc/internal/jsonx"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/uidauth"
)

// UserStates is the user-state store the handlers need (redisstore.UserStore).
type UserStates interface {
	Get(ctx context.Context, uid string, now time.Time) (redisstore.State, error)
	Record(ctx context.Context, uid, prev string, next *popup.UserState, ev *event.Event, dedupe bool) (redisstore.Outcome, error)
}

// Public serves the public listener.
type Public struct {
	Snapshots *snapshot.Holder
	Users     UserStates
	Breaker   *breaker.Breaker
	DailyCap  int
	// Budget bounds the Redis (and, on a miss, MySQL) work of one request; past it GET degrades.
	Budget  time.Duration
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *Metrics
	// Ready reports whether Redis is reachable (for /readyz).
	Ready func(ctx context.Context) error
	// UIDAuth, when set, requires the gateway's signature of the uid on every request that names
	// one (POPUP_UID_HMAC_KEYS, docs/SECURITY.md); nil trusts the uid as sent.
	UIDAuth *uidauth.Verifier

	ids        *idSource
	lastErrLog atomic.Int64
}

// maxActionBody is the action body limit of SPEC §4.
const maxActionBody = 4 << 10

// maxRecordTries bounds the optimistic retries when a concurrent request changed the state.
const maxRecordTries = 4

// Router builds the public router: nothing admin-ish is mounted here.
func (p *Public) Router() *gin.Engine {
	p.ids = newIDSource()
	r := newEngine(p.Log)
	if p.Metrics != nil {
		r.Use(p.Metrics.observe)
	}
	r.GET("/api/v1/popup", p.getPopup)
	r.POST("/api/v1/popups/:id/actions", p.postAction)
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", p.readyz)
	return r
}

func (p *Public) readyz(c *gin.Context) {
	if draining(c.Request.Context()) {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not_ready", "reason": "shutting down"})
		return
	}
	s := p.Snapshots.Load()
	if s == nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not_ready", "reason": "no config snapshot loaded"})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), time.Second)
	defer cancel()
	if err := p.Ready(ctx); err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not_ready", "reason": "redis unreachable"})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "config_version": s.Version})
}

var (
	nullHead      = []byte(`{"popup":null,"config_version":`)
	popupHead     = []byte(`{"popup":`)
	decisionHead  = []byte(`,"decision_id":"`)
	versionHead   = []byte(`","config_version":`)
	degradedBody  = []byte(`{"popup":null}`)
	acceptedBody  = []byte(`{"status":"accepted"}`)
	contentTypeJS = "application/json; charset=utf-8"
)

func (p *Public) getPopup(c *gin.Context) {
	q, aerr := scanQuery(c.Request.URL.RawQuery)
	if aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	req, aerr := parseRequest(q.uid, q.platform, q.appVersion, q.region, q.lang)
	if aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	now := p.Now()
	if aerr := p.checkUID(c, req.UID, now); aerr != nil {
		writeError(c, p.Log, aerr)
		return
	}
	snap := p.Snapshots.Load()
	if snap == nil {
		p.degraded(c, "no_snapshot")
		return
	}
	cands := snap.Candidates(req.Platform, req.Region)
	if !anyCandidate(cands, &req, now) {
		// Nothing targets this request: no Redis round trip needed.
		p.answerNull(c, snap, "no_candidate")
		return
	}
	if !p.Breaker.Allow(now) {
		p.degraded(c, "breaker_open")
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.Budget)
	defer cancel()
	for try := 0; try < maxRecordTries; try++ {
		st, err := p.Users.Get(ctx, req.UID, now)
		if err != nil {
			if p.storeFailed(c, now, "get_state", err) {
				p.degraded(c, "redis_error")
			}
			return
		}
		chosen := popup.Select(cands, req, &st.UserState, now, p.DailyCap)
		if chosen == nil {
			p.Breaker.Success()
			p.answerNull(c, snap, "none_eligible")
			return
		}
		ps := chosen.ApplyImpression(&st.UserState, now)
		var idBuf [40]byte
		decision := p.ids.append(idBuf[:0])
		ev := event.Event{ID: string(decision), UID: req.UID, PopupID: chosen.Popup.ID, Action: event.Impression,
			At: now, DecisionID: string(decision), NextShowAt: ps.NextShowAt, Impressions: ps.Impressions}
		out, err := p.Users.Record(ctx, req.UID, st.Raw, &st.UserState, &ev, false)
		if err != nil {
			if p.storeFailed(c, now, "record_impression", err) {
				p.degraded(c, "redis_error")
			}
			return
		}
		p.Breaker.Success()
		if out == redisstore.Recorded {
			p.answerPopup(c, snap, snap.Entry(chosen.Popup.ID), decision)
			return
		}
		// Conflict: another request of this user changed the state first; decide again.
	}
	p.answerNull(c, snap, "conflict")
}

// checkUID demands the gateway's signature of uid when POPUP_UID_HMAC_KEYS is set: after the
// request's own validation, before any store is touched. Without keys it lets every uid through.
func (p *Public) checkUID(c *gin.Context, uid string, now time.Time) *apiError {
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

// anyCandidate reports whether some active popup is in window and targets req, before any I/O.
func anyCandidate(cs []*popup.Compiled, req *popup.Request, now time.Time) bool {
	for _, c := range cs {
		if c.InWindow(now) && c.Match(*req) == popup.ReasonNone {
			return true
		}
	}
	return false
}

// storeFailed accounts for a failed store call of the request behind c. It reports whether the
// caller should answer the failure (degraded, 503): not when the client has already gone.
func (p *Public) storeFailed(c *gin.Context, now time.Time, op string, err error) (answer bool) {
	if c.Request.Context().Err() != nil {
		// The client hung up (net/http cancels the request when its connection closes), which
		// cancelled the store call: the store did not fail. Counting it would let a mass
		// disconnect (a load generator stopping, a proxy restarting) open the breaker and
		// degrade everybody else's answers. Nobody reads an answer.
		p.count("client_gone")
		return false
	}
	switch {
	case errors.Is(err, redisstore.ErrLoad):
		// MySQL slow or saturated while loading a lost state: this request degrades, but it
		// says nothing about Redis, so the breaker is left alone.
		if p.Metrics != nil {
			p.Metrics.MySQLErrors.Inc()
		}
	default:
		p.Breaker.Failure(now)
		if p.Metrics != nil {
			p.Metrics.RedisErrors.WithLabelValues(op).Inc()
		}
	}
	// At most one log line a second: an outage must not turn into a log flood.
	if last := p.lastErrLog.Load(); now.UnixNano()-last > int64(time.Second) && p.lastErrLog.CompareAndSwap(last, now.UnixNano()) {
		p.Log.Warn("redis call failed; answering degraded", "op", op, "err", err)
	}
	return true
}

func (p *Public) count(outcome string) {
	if p.Metrics != nil {
		p.Metrics.Decisions.WithLabelValues(outcome).Inc()
	}
}

func (p *Public) degraded(c *gin.Context, why string) {
	p.count("degraded_" + why)
	if p.Metrics != nil {
		p.Metrics.Degraded.Inc()
	}
	c.Header("X-Popup-Degraded", "1")
	c.Data(http.StatusOK, contentTypeJS, degradedBody)
}

func (p *Public) answerNull(c *gin.Context, snap *snapshot.Snapshot, outcome string) {
	p.count(outcome)
	var b [64]byte
	out := append(b[:0], nullHead...)
	out = strconv.AppendInt(out, snap.Version, 10)
	out = append(out, '}')
	c.Data(http.StatusOK, contentTypeJS, out)
}

func (p *Public) answerPopup(c *gin.Context, snap *snapshot.Snapshot, e *snapshot.Entry, decision []byte) {
	p.count("popup")
	out := make([]byte, 0, len(e.JSON)+96)
	out = append(out, popupHead...)
	out = append(out, e.JSON...)
	out = append(out, decisionHead...)
	out = append(out, decision...)
	out = append(out, versionHead...)
	out = strconv.AppendInt(out, snap.Version, 10)
	out = append(out, '}')
	c.Data(http.StatusOK, contentTypeJS, out)
}

// actionBody is the body of POST /api/v1/popups/{id}/actions.
type actionBody struct {
	UID        string `json:"uid"`
	Action     string `json:"action"`
	EventID    string `json:"event_id"`
	DecisionID string `json:"decision_id"`
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
	snap := p.Snapshots.Load()
	if snap == nil {
		writeError(c, p.Log, errUnavailable)
		return
	}
	entry := snap.Entry(id)
	if entry == nil {
		writeError(c, p.Log, errPopupGone)
		return
	}
	if !p.Breaker.Allow(now) {
		writeError(c, p.Log, errUnavailable)
		return
	}
	if body.EventID == "" {
		body.EventID = p.ids.next()
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 4*p.Budget)
	defer cancel()
	for try := 0; try < maxRecordTries; try++ {
		st, err := p.Users.Get(ctx, body.UID, now)
		if err != nil {
			if p.storeFailed(c, now, "get_state", err) {
				writeError(c, p.Log, errUnavailable)
			}
			return
		}
		var ps popup.PopupState
		action := event.Action(body.Action)
		if action == event.Click {
			ps = entry.ApplyClick(&st.UserState, now)
		} else {
			ps = entry.ApplyClose(&st.UserState, now)
		}
		ev := event.Event{ID: body.EventID, UID: body.UID, PopupID: id, Action: action, At: now,
			DecisionID: body.DecisionID, NextShowAt: ps.NextShowAt, Impressions: ps.Impressions}
		out, err := p.Users.Record(ctx, body.UID, st.Raw, &st.UserState, &ev, true)
		if err != nil {
			if p.storeFailed(c, now, "record_action", err) {
				writeError(c, p.Log, errUnavailable)
			}
			return
		}
		p.Breaker.Success()
		switch out {
		case redisstore.Recorded, redisstore.Duplicate: // a duplicate was applied once already
			c.Data(http.StatusAccepted, contentTypeJS, acceptedBody)
			return
		case redisstore.RateLimited:
			writeError(c, p.Log, errRateLimited)
			return
		}
	}
	writeError(c, p.Log, errUnavailable)
}

func readActionBody(c *gin.Context) (actionBody, *apiError) {
	var b actionBody
	if c.Request.ContentLength > maxActionBody {
		return b, errTooLarge
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxActionBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return b, errTooLarge
		}
		return b, badRequest("invalid_body", "could not read the request body")
	}
	return decodeActionBody(raw)
}

// decodeActionBody parses and validates an action body.
func decodeActionBody(raw []byte) (actionBody, *apiError) {
	var b actionBody
	if err := jsonx.Unmarshal(raw, &b); err != nil {
		return b, badRequest("invalid_json", "body must be a JSON object like {\"uid\":\"u1\",\"action\":\"click\"}")
	}
	switch {
	case b.UID == "":
		return b, badRequest("invalid_uid", "uid is required")
	case !popup.ValidUID(b.UID):
		return b, badRequest("invalid_uid", "uid must be 1-64 characters of [A-Za-z0-9_.:-]")
	case b.Action != string(event.Click) && b.Action != string(event.Close):
		return b, badRequest("invalid_action", "action must be click or close")
	case b.EventID != "" && !validID(b.EventID):
		return b, badRequest("invalid_event_id", "event_id must be 1-64 characters of [A-Za-z0-9_.:-]")
	case b.DecisionID != "" && !validID(b.DecisionID):
		return b, badRequest("invalid_decision_id", "decision_id must be 1-64 characters of [A-Za-z0-9_.:-]")
	}
	return b, nil
}

// newEngine is a bare Gin engine with JSON answers for panics, unknown routes and methods; no
// per-request logging.
func newEngine(log *slog.Logger) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, rec any) {
		log.Error("panic", "path", c.Request.URL.Path, "panic", rec)
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": gin.H{"code": "internal", "message": "internal error"}})
	}))
	r.NoRoute(func(c *gin.Context) { writeError(c, log, errNotFound) })
	r.NoMethod(func(c *gin.Context) {
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, gin.H{"error": gin.H{"code": "method_not_allowed", "message": "method not allowed on this route"}})
	})
	return r
}
