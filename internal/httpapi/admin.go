package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// PopupRepo is the durable popup store the admin API writes (mysqlstore.PopupRepo).
type PopupRepo interface {
	List(ctx context.Context, includeArchived bool) ([]popup.Popup, error)
	Get(ctx context.Context, id int64) (popup.Popup, error)
	Create(ctx context.Context, p popup.Popup) (popup.Popup, error)
	Update(ctx context.Context, id int64, p popup.Popup) (popup.Popup, error)
	Archive(ctx context.Context, id int64) (popup.Popup, error)
}

// Admin serves the admin listener. Every route needs the bearer token.
type Admin struct {
	Token     string
	Repo      PopupRepo
	Users     UserStates
	Snapshots *snapshot.Holder
	Decider   *decide.Decider // the preview explains its decisions
	Now       func() time.Time
	Log       *slog.Logger
	Gatherer  prometheus.Gatherer
	// Reload rebuilds the Redis cache from MySQL, announces it to every instance and refreshes
	// this one; it returns the version now served.
	Reload func(ctx context.Context) (int64, error)
}

// ErrNoToken is returned when the admin API would start without a token.
var ErrNoToken = errors.New("POPUP_ADMIN_TOKEN is empty: the admin API refuses to start without a token")

// maxAdminBody bounds popup bodies (content is up to 4000 characters, plus targeting lists).
const maxAdminBody = 1 << 20

// Router builds the admin router.
func (a *Admin) Router() (*gin.Engine, error) {
	if a.Token == "" {
		return nil, ErrNoToken
	}
	r := newEngine(a.Log)
	r.Use(a.auth)
	v1 := r.Group("/admin/v1")
	v1.POST("/popups", a.create)
	v1.GET("/popups", a.list)
	v1.GET("/popups/:id", a.get)
	v1.PUT("/popups/:id", a.update)
	v1.DELETE("/popups/:id", a.archive)
	v1.GET("/preview", a.preview)
	v1.GET("/users/:uid/state", a.userState)
	v1.POST("/cache/reload", a.reload)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(a.Gatherer, promhttp.HandlerOpts{})))
	r.GET("/debug/pprof/", gin.WrapF(pprof.Index))
	r.GET("/debug/pprof/cmdline", gin.WrapF(pprof.Cmdline))
	r.GET("/debug/pprof/profile", gin.WrapF(pprof.Profile))
	r.GET("/debug/pprof/symbol", gin.WrapF(pprof.Symbol))
	r.GET("/debug/pprof/trace", gin.WrapF(pprof.Trace))
	r.GET("/debug/pprof/:name", func(c *gin.Context) { pprof.Handler(c.Param("name")).ServeHTTP(c.Writer, c.Request) })
	return r, nil
}

// auth compares the bearer token in constant time.
func (a *Admin) auth(c *gin.Context) {
	const prefix = "Bearer "
	h := c.GetHeader("Authorization")
	ok := len(h) > len(prefix) && h[:len(prefix)] == prefix &&
		subtle.ConstantTimeCompare([]byte(h[len(prefix):]), []byte(a.Token)) == 1
	if !ok {
		c.Header("WWW-Authenticate", `Bearer realm="popup-admin"`)
		writeError(c, a.Log, errAuth)
	}
}

func popupID(c *gin.Context) (int64, *apiError) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("invalid_popup_id", "popup id must be a positive integer")
	}
	return id, nil
}

// readInput decodes a popup body strictly: an unknown field is named in the error, not ignored.
func readInput(c *gin.Context) (popup.Input, *apiError) {
	var in popup.Input
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxAdminBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return in, &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "popup body over 1 MiB"}
		}
		return in, badRequest("invalid_body", "could not read the request body")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, badRequest("invalid_json", "body is not a valid popup object: "+err.Error())
	}
	if dec.More() {
		return in, badRequest("invalid_json", "body must hold exactly one JSON object")
	}
	return in, nil
}

// readPopup reads and validates a popup body; the error is an *apiError or a validation error.
func readPopup(c *gin.Context) (popup.Popup, error) {
	in, aerr := readInput(c)
	if aerr != nil {
		return popup.Popup{}, aerr
	}
	return in.Build()
}

// save runs one popup write, propagates it to every instance and answers with the stored popup.
func (a *Admin) save(c *gin.Context, status int, write func(context.Context) (popup.Popup, error)) {
	stored, err := write(c.Request.Context())
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.propagate(c.Request.Context())
	c.JSON(status, stored)
}

func (a *Admin) create(c *gin.Context) {
	p, err := readPopup(c)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.save(c, http.StatusCreated, func(ctx context.Context) (popup.Popup, error) { return a.Repo.Create(ctx, p) })
}

func (a *Admin) update(c *gin.Context) {
	id, aerr := popupID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	p, err := readPopup(c)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.save(c, http.StatusOK, func(ctx context.Context) (popup.Popup, error) { return a.Repo.Update(ctx, id, p) })
}

func (a *Admin) archive(c *gin.Context) {
	id, aerr := popupID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	a.save(c, http.StatusOK, func(ctx context.Context) (popup.Popup, error) { return a.Repo.Archive(ctx, id) })
}

// propagate pushes a committed change to Redis and every instance. MySQL already holds the
// change, so a failure here is logged, not returned: the worker's periodic warm-up and every
// instance's poll will still pick it up.
func (a *Admin) propagate(ctx context.Context) {
	if _, err := a.Reload(ctx); err != nil {
		a.Log.Warn("config change saved but not yet propagated", "err", err)
	}
}

func (a *Admin) list(c *gin.Context) {
	ps, err := a.Repo.List(c.Request.Context(), c.Query("include_archived") == "true")
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"popups": ps})
}

func (a *Admin) get(c *gin.Context) {
	id, aerr := popupID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	p, err := a.Repo.Get(c.Request.Context(), id)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

// errPreviewUnavailable: no config loaded yet, or the user's state cannot be read.
var errPreviewUnavailable = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "the config or the user's state cannot be read now; retry later"}

// preview explains the decision for a user without recording anything, through the same
// decision code as the homepage (decide.Explain).
func (a *Admin) preview(c *gin.Context) {
	req, aerr := parseRequest(c.Query("uid"), c.Query("platform"), c.Query("app_version"), c.Query("region"), c.Query("lang"))
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	ex, err := a.Decider.Explain(c.Request.Context(), req, a.Now(), decide.ExplainOptions{})
	if err != nil {
		if errors.Is(err, decide.ErrUnavailable) {
			err = errPreviewUnavailable
		}
		writeError(c, a.Log, err)
		return
	}
	var shown json.RawMessage = []byte("null")
	if ex.Shown != nil {
		shown = ex.Shown
	}
	c.JSON(http.StatusOK, gin.H{"popup": shown, "config_version": ex.Version, "candidates": ex.Candidates})
}

type popupStateView struct {
	PopupID          int64      `json:"popup_id"`
	NextShowAt       *time.Time `json:"next_show_at"`
	Impressions      int        `json:"impressions"`
	LastImpressionAt *time.Time `json:"last_impression_at"`
	LastClickAt      *time.Time `json:"last_click_at"`
	LastCloseAt      *time.Time `json:"last_close_at"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (a *Admin) userState(c *gin.Context) {
	uid := c.Param("uid")
	if !popup.ValidUID(uid) {
		writeError(c, a.Log, errUIDMalformed)
		return
	}
	now := a.Now()
	st, err := a.Users.Get(c.Request.Context(), uid, now)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	views := []popupStateView{}
	for id, ps := range st.Popups {
		views = append(views, popupStateView{PopupID: id, NextShowAt: timePtr(ps.NextShowAt), Impressions: ps.Impressions,
			LastImpressionAt: timePtr(ps.LastImpressionAt), LastClickAt: timePtr(ps.LastClickAt), LastCloseAt: timePtr(ps.LastCloseAt)})
	}
	slices.SortFunc(views, func(x, y popupStateView) int { return cmp.Compare(x.PopupID, y.PopupID) })
	c.JSON(http.StatusOK, gin.H{"uid": uid, "impressions_today": st.ImpressionsOn(now), "popups": views})
}

func (a *Admin) reload(c *gin.Context) {
	v, err := a.Reload(c.Request.Context())
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"config_version": v})
}
