package httpapi

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// PopupRepo is the durable popup store the admin API reads (mysqlstore.PopupRepo) and the popup
// write use case (manage.Service), whose writes follow its one path (manage's run): the role
// (a *popup.ForbiddenError, nothing written), then If-Match (popup.ErrRevisionMismatch), then the
// bucket seed and experiment rules, then the no-op check (an Update or Rollback that would leave
// the popup as it is writes nothing: changed false). Every write records the popup's new
// revision and an audit entry naming actor and its role in its own transaction; a write that
// would give two live popups one name returns popup.ErrNameTaken.
type PopupRepo interface {
	List(ctx context.Context, includeArchived bool) ([]popup.Popup, error)
	Find(ctx context.Context, q popup.ListQuery) (popup.ListPage, error)
	Get(ctx context.Context, id int64) (popup.Popup, error)
	Create(ctx context.Context, actor popup.Actor, p popup.Popup) (popup.Popup, error)
	Update(ctx context.Context, actor popup.Actor, id int64, p popup.Popup, opts popup.UpdateOptions) (stored popup.Popup, changed bool, err error)
	Transition(ctx context.Context, actor popup.Actor, id int64, t popup.ExperimentTransition, ifRevision []int64) (popup.Popup, error)
	Archive(ctx context.Context, actor popup.Actor, id int64, ifRevision []int64) (popup.Popup, error)
	Rollback(ctx context.Context, actor popup.Actor, id, toRevision int64, opts popup.UpdateOptions) (stored popup.Popup, changed bool, err error)
	History(ctx context.Context, id int64) ([]popup.Revision, error)
	Audit(ctx context.Context, q popup.AuditQuery) ([]popup.AuditEntry, error)
	Import(ctx context.Context, actor popup.Actor, ps []popup.Popup, opts popup.ImportOptions) (popup.ImportResult, error)
}

// Admin serves the admin listener. Every route needs the bearer token of an operator, and the
// operator's role must allow what the request does (docs/CONTRACT.md §9).
type Admin struct {
	// Operators hold the admin tokens (POPUP_ADMIN_TOKENS, POPUP_ADMIN_TOKENS_FILE); Token, when
	// set, is one more, of the operator "admin" with role admin (POPUP_ADMIN_TOKEN).
	Operators []Operator
	Token     string
	// Registerer takes the admin API's own series (popup_admin_forbidden_total); nil: unregistered.
	Registerer prometheus.Registerer
	Repo       PopupRepo
	Users      UserStates
	Snapshots  *snapshot.Holder
	Decider    *decide.Decider // the preview explains its decisions
	Now        func() time.Time
	Log        *slog.Logger
	Gatherer   prometheus.Gatherer
	Stats      StatsReader // GET .../stats: daily results per popup
	// ExperimentDays reads experiment results (GET .../experiment/results).
	ExperimentDays ExperimentDays
	// Settings holds the team's settings (the reporting time zone, the pacing).
	Settings SettingsStore
	// DefaultPacing is the pacing until the team sets one (config.Config.DefaultPacing).
	DefaultPacing popup.Pacing
	// LogRetention is POPUP_ACTION_LOG_RETENTION: unique users are counted for the days the
	// action log still keeps whole (0: its default).
	LogRetention time.Duration
	// Reload rebuilds the Redis cache from MySQL, announces it to every instance and refreshes
	// this one; it returns the version now served.
	Reload func(ctx context.Context) (int64, error)
	// Audiences are the audience writes and reads (manage.Audiences); AudienceSets the member sets
	// this instance serves.
	Audiences    AudienceService
	AudienceSets AudienceSets
	// Erasures and Exports are a user's erasure and export (docs/CONTRACT.md §12).
	Erasures Erasures
	Exports  Exports
	// Goals are the goal writes and reads (manage.Goals); GoalsChanged, when set, is called after
	// each committed goal write to make every instance's conversion ingest see it.
	Goals        GoalService
	GoalsChanged func(ctx context.Context) error
	// ExperimentGoals reads the goal counts of experiment results (nil: results without goals).
	ExperimentGoals ExperimentGoals
	// CampaignGoals reads a popup's conversions for its results (nil: results without them).
	CampaignGoals CampaignGoals
	// Holdout reads the global holdout's phases and cohorts (nil: no holdout results).
	Holdout HoldoutReads
	// Links is the POPUP_LINK_SCHEMES allow-list of link_url and buttons[].link_url; the zero
	// value allows http and https.
	Links popup.LinkSchemes
	// IngestKeys are the credentials of conversions that carry a value.
	IngestKeys IngestKeyStore
}

// ErrNoToken is returned when the admin API would start without a token.
var ErrNoToken = errors.New("no admin token (POPUP_ADMIN_TOKEN, POPUP_ADMIN_TOKENS or POPUP_ADMIN_TOKENS_FILE): the admin API refuses to start without one")

// maxAdminBody bounds popup bodies (content is up to 4000 characters, plus targeting lists).
const maxAdminBody = 1 << 20

// Router builds the admin router.
func (a *Admin) Router() (*gin.Engine, error) {
	ops := a.Operators
	if a.Token != "" {
		ops = append(slices.Clip(ops), Operator{Name: AdminOperator, Role: popup.RoleAdmin, Token: a.Token})
	}
	keys, err := operatorKeys(ops)
	if err != nil {
		return nil, err
	}
	refused, err := newRefusals(a.Registerer)
	if err != nil {
		return nil, err
	}
	// Reads (GET, and the previews, which record nothing) are every operator's. Each write route
	// has the least role any of its requests needs as a guard; a popup write's own role (a draft
	// that stays a draft is an editor's, anything live a publisher's) is checked in the write,
	// against the stored popup locked in its transaction (PopupRepo, manage).
	var (
		editor    = a.requireRole(popup.RoleEditor, "writing popups")
		publisher = func(what string) gin.HandlerFunc { return a.requireRole(popup.RolePublisher, what) }
		admin     = func(what string) gin.HandlerFunc { return a.requireRole(popup.RoleAdmin, what) }
	)
	r := newEngine(a.Log)
	r.Use(serveConsole()) // before auth: the console's static files (console.go)
	r.Use(func(c *gin.Context) { a.auth(c, keys) })
	r.Use(a.logRefusal(refused))
	v1 := r.Group("/admin/v1")
	v1.GET("/me", a.me)
	v1.GET("/operators", admin("listing operators"), operators(keys))
	v1.POST("/popups", editor, a.create)
	v1.GET("/popups", a.list)
	v1.GET("/popups/:id", a.get)
	v1.PUT("/popups/:id", editor, a.update)
	v1.DELETE("/popups/:id", publisher("archiving a popup"), a.archive)
	v1.GET("/popups/:id/translations.csv", a.getTranslationsCSV)
	v1.PUT("/popups/:id/translations.csv", editor, a.putTranslationsCSV)
	v1.GET("/popups/:id/history", a.history)
	v1.POST("/popups/:id/rollback", publisher("rolling back a popup"), a.rollback)
	v1.POST("/popups/:id/experiment/start", editor, a.transition(popup.ChangeExperimentStart))
	v1.POST("/popups/:id/experiment/stop", editor, a.transition(popup.ChangeExperimentStop))
	v1.POST("/popups/:id/experiment/conclude", editor, a.transition(popup.ChangeExperimentConclude))
	// Audiences: creating and editing one is an editor's, deleting one a publisher's; a member
	// write of an audience a live popup uses needs a publisher, decided in the write.
	audienceEditor := a.requireRole(popup.RoleEditor, "writing audiences")
	v1.POST("/audiences", audienceEditor, a.createAudience)
	v1.GET("/audiences", a.listAudiences)
	v1.GET("/audiences/:id", a.getAudience)
	v1.PUT("/audiences/:id", audienceEditor, a.updateAudience)
	v1.DELETE("/audiences/:id", publisher("deleting an audience"), a.deleteAudience)
	v1.GET("/audiences/:id/history", a.audienceHistory)
	v1.GET("/audiences/:id/members", a.members)
	v1.PUT("/audiences/:id/members", audienceEditor, a.writeMembers(popup.AudienceReplace))
	v1.POST("/audiences/:id/members/add", audienceEditor, a.writeMembers(popup.AudienceAdd))
	v1.POST("/audiences/:id/members/remove", audienceEditor, a.writeMembers(popup.AudienceRemove))
	v1.GET("/audiences/:id/members/:uid", a.member)
	// Goals (docs/CONTRACT.md §14): changing them is a publisher's, as they decide verdicts.
	goalWriter := publisher("writing goals")
	v1.POST("/goals", goalWriter, a.createGoal)
	v1.GET("/goals", a.listGoals)
	v1.GET("/goals/:key", a.getGoal)
	v1.PUT("/goals/:key", goalWriter, a.updateGoal)
	v1.DELETE("/goals/:key", goalWriter, a.deleteGoal)
	v1.GET("/goals/:key/history", a.goalHistory)
	v1.GET("/audit", a.audit)
	v1.GET("/export", a.export)
	v1.POST("/import", editor, a.importPopups)
	v1.GET("/preview", a.preview)
	v1.POST("/preview", a.previewDraft)
	v1.GET("/users/:uid/state", a.userState)
	// A user's personal data (docs/CONTRACT.md §12): erasing and exporting it are an admin's.
	v1.DELETE("/users/:uid", admin("erasing a user"), a.eraseUser)
	v1.GET("/users/:uid/export", admin("exporting a user's data"), a.exportUser)
	v1.GET("/erasures/:id", admin("reading an erasure"), a.erasure)
	// Ingest keys vouch for conversion values: managing them is an admin's, as secrets are.
	v1.POST("/ingest-keys", admin("creating an ingest key"), a.createIngestKey)
	v1.GET("/ingest-keys", admin("listing ingest keys"), a.listIngestKeys)
	v1.DELETE("/ingest-keys/:id", admin("revoking an ingest key"), a.revokeIngestKey)
	v1.POST("/cache/reload", admin("reloading the cache"), a.reload)
	v1.GET("/popups/:id/stats", a.popupStats)
	v1.GET("/popups/:id/stats.csv", a.popupStatsCSV)
	v1.GET("/stats", a.allStats)
	v1.GET("/popups/:id/experiment/results", a.experimentResults)
	v1.GET("/holdout/results", a.holdoutResults)
	v1.POST("/popups/:id/experiment/reassignment", a.experimentReassignment) // a read: it records nothing
	// Team settings: reading is for every operator, changing them is an admin's.
	v1.GET("/settings", a.getSettings)
	v1.PUT("/settings", admin("changing settings"), a.putSettings)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(a.Gatherer, promhttp.HandlerOpts{})))
	dbg := r.Group("/debug/pprof", admin("profiling (/debug/pprof)"))
	dbg.GET("/", gin.WrapF(pprof.Index))
	dbg.GET("/cmdline", gin.WrapF(pprof.Cmdline))
	dbg.GET("/profile", gin.WrapF(pprof.Profile))
	dbg.GET("/symbol", gin.WrapF(pprof.Symbol))
	dbg.GET("/trace", gin.WrapF(pprof.Trace))
	dbg.GET("/:name", func(c *gin.Context) { pprof.Handler(c.Param("name")).ServeHTTP(c.Writer, c.Request) })
	return r, nil
}

// auth finds the operator of the bearer token (matchOperator: constant time, every token
// compared) and leaves it, with its role, for the handlers.
func (a *Admin) auth(c *gin.Context, keys []operatorKey) {
	const prefix = "Bearer "
	h := c.GetHeader("Authorization")
	var (
		act popup.Actor
		ok  bool
	)
	if len(h) > len(prefix) && h[:len(prefix)] == prefix {
		act, ok = matchOperator(keys, h[len(prefix):], subtle.ConstantTimeCompare)
	}
	if !ok {
		c.Header("WWW-Authenticate", `Bearer realm="popup-admin"`)
		writeError(c, a.Log, errAuth)
		return
	}
	c.Set(actorCtxKey, act)
}

func popupID(c *gin.Context) (int64, *apiError) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("invalid_popup_id", "popup id must be a positive integer")
	}
	return id, nil
}

var errPopupTooLarge = &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "popup body over 1 MiB"}

// readPopup reads, decodes and validates a popup body. pathID is the id of a PUT's path (0 for
// a POST): a body id that differs from it is refused, since the client meant another popup.
// keepGoal: the body's experiment does not name its primary goal (an update keeps the stored one).
// The error is an *apiError or a *popup.ValidationError naming the fields.
func (a *Admin) readPopup(c *gin.Context, pathID int64) (p popup.Popup, keepGoal bool, err error) {
	raw, aerr := readBody(c, maxAdminBody, errPopupTooLarge)
	if aerr != nil {
		return popup.Popup{}, false, aerr
	}
	in, err := decodePopupBody(raw)
	if err != nil {
		return popup.Popup{}, false, err
	}
	if pathID != 0 && in.ID != nil && *in.ID != pathID {
		return popup.Popup{}, false, &popup.ValidationError{Fields: []popup.FieldError{{Field: "id",
			Message: "must be " + strconv.FormatInt(pathID, 10) + ", the id in the path, or be left out"}}}
	}
	p, err = fromWire(in).BuildWith(a.Links)
	return p, in.keepsPrimaryGoal(), err
}

// etag is a popup revision as an entity tag.
func etag(revision int64) string { return `"` + strconv.FormatInt(revision, 10) + `"` }

// ifMatch reads the If-Match header: nil when there is none or it is "*" (write whatever the
// revision), else the revisions its strong entity tags name. A tag this API never issued (a weak
// one, which a write's strong comparison never matches, or a foreign one) adds nothing, so a
// header of only such tags gives an empty list, which no revision matches.
func ifMatch(c *gin.Context) []int64 {
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

// writePopup answers with one popup and its revision as the ETag.
func (a *Admin) writePopup(c *gin.Context, status int, p popup.Popup) {
	c.Header("ETag", etag(p.Revision))
	c.JSON(status, toWire(p, a.Now()))
}

// save runs one popup write, logs it (operator, role, action, popup, revision; never a token),
// propagates it to every instance and answers with the stored popup. A write that changed
// nothing (changed false) is answered with the stored popup alone: nothing to log or propagate.
func (a *Admin) save(c *gin.Context, status int, action popup.ChangeKind, write func(ctx context.Context, by popup.Actor) (stored popup.Popup, changed bool, err error)) {
	by := actor(c)
	stored, changed, err := write(c.Request.Context(), by)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	if changed {
		a.Log.Info("popup written", "operator", by.Name, "role", by.Role.String(), "action", string(action), "popup_id", stored.ID, "revision", stored.Revision)
		a.propagate(c.Request.Context())
	}
	a.writePopup(c, status, stored)
}

// alwaysChanges adapts a write that always changes the popup (a create, an archive) to save.
func alwaysChanges(p popup.Popup, err error) (popup.Popup, bool, error) { return p, err == nil, err }

func (a *Admin) create(c *gin.Context) {
	p, _, err := a.readPopup(c, 0)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.save(c, http.StatusCreated, popup.ChangeCreate, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		return alwaysChanges(a.Repo.Create(ctx, by, p))
	})
}

func (a *Admin) update(c *gin.Context) {
	id, aerr := popupID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	accept, aerr := parseFlag("accept_reassignment", c.Query("accept_reassignment"))
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	end, aerr := parseFlag("end_experiment", c.Query("end_experiment"))
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	p, keepGoal, err := a.readPopup(c, id)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	opts := popup.UpdateOptions{IfRevision: ifMatch(c), AcceptReassignment: accept, EndExperiment: end, KeepPrimaryGoal: keepGoal}
	a.save(c, http.StatusOK, popup.ChangeUpdate, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		return a.Repo.Update(ctx, by, id, p, opts)
	})
}

// transition answers POST /admin/v1/popups/{id}/experiment/{start,stop,conclude}: the popup's
// experiment changes status (a conclude ships the variant its body names), as one write.
func (a *Admin) transition(action popup.ChangeKind) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, aerr := popupID(c)
		if aerr != nil {
			writeError(c, a.Log, aerr)
			return
		}
		t := popup.ExperimentTransition{Action: action}
		if action == popup.ChangeExperimentConclude {
			var body struct {
				Variant *string `json:"variant"`
			}
			if aerr := readSmallJSON(c, 4<<10, &body); aerr != nil {
				writeError(c, a.Log, aerr)
				return
			}
			if body.Variant == nil {
				writeError(c, a.Log, &apiError{status: http.StatusBadRequest, code: "validation_failed", message: "variant is required",
					fields: []popup.FieldError{{Field: "variant", Message: "is required: the key of the variant to ship"}}})
				return
			}
			t.Variant = *body.Variant
		}
		revs := ifMatch(c)
		a.save(c, http.StatusOK, action, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
			return alwaysChanges(a.Repo.Transition(ctx, by, id, t, revs))
		})
	}
}

func (a *Admin) archive(c *gin.Context) {
	id, aerr := popupID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	revs := ifMatch(c)
	a.save(c, http.StatusOK, popup.ChangeArchive, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		return alwaysChanges(a.Repo.Archive(ctx, by, id, revs))
	})
}

// propagate pushes a committed change to Redis and every instance. MySQL already holds the
// change, so a failure here is logged, not returned: the worker's periodic warm-up and every
// instance's poll will still pick it up.
func (a *Admin) propagate(ctx context.Context) {
	if _, err := a.Reload(ctx); err != nil {
		a.Log.Warn("config change saved but not yet propagated", "err", err)
	}
}

// popupOf reads the popup the path's {id} names; false: the error is answered.
func (a *Admin) popupOf(c *gin.Context) (popup.Popup, bool) {
	id, aerr := popupID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return popup.Popup{}, false
	}
	p, err := a.Repo.Get(c.Request.Context(), id)
	if err != nil {
		writeError(c, a.Log, err)
		return popup.Popup{}, false
	}
	return p, true
}

func (a *Admin) get(c *gin.Context) {
	p, ok := a.popupOf(c)
	if !ok {
		return
	}
	a.writePopup(c, http.StatusOK, p)
}

// errStateUnavailable: the user's state cannot be read (Redis down, or MySQL after a Redis miss).
var errStateUnavailable = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "the user's state cannot be read now; retry later"}

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
	a.explain(c, req, a.Now(), decide.ExplainOptions{})
}

// explain answers a preview (GET and POST): the decision for req at now with its candidates,
// recording nothing.
func (a *Admin) explain(c *gin.Context, req popup.Request, now time.Time, opts decide.ExplainOptions) {
	ex, err := a.Decider.Explain(c.Request.Context(), req, now, opts)
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
	answer := gin.H{"popup": shown, "config_version": ex.Version, "candidates": candidatesToWire(ex.Candidates)}
	if ex.Shown != nil {
		answer["locale"] = ex.Locale // the language shown for the request's lang (docs/CONTRACT.md §13)
		answer["locale_match"] = ex.LocaleMatch.String()
	}
	if ex.Arm != "" {
		answer["arm"] = ex.Arm // the user's arm in the chosen popup's running experiment (docs/CONTRACT.md §10)
	}
	if len(ex.Arms) > 0 {
		arms := make([]armStepWire, len(ex.Arms))
		for i, s := range ex.Arms {
			arms[i] = armStepWire{PopupID: s.PopupID, Arm: s.Arm}
		}
		answer["arms"] = arms
	}
	c.JSON(http.StatusOK, answer)
}

// armStepWire is one experiment arm a previewed decision passed (decide.ArmStep).
type armStepWire struct {
	PopupID int64  `json:"popup_id"`
	Arm     string `json:"arm"`
}

type popupStateView struct {
	PopupID          int64      `json:"popup_id"`
	NextShowAt       *time.Time `json:"next_show_at"`
	Impressions      int        `json:"impressions"`
	LastImpressionAt *time.Time `json:"last_impression_at"`
	LastClickAt      *time.Time `json:"last_click_at"`
	LastCloseAt      *time.Time `json:"last_close_at"`
}

// stateView is a user's state of one popup on the wire.
func stateView(id int64, ps popup.PopupState) popupStateView {
	return popupStateView{PopupID: id, NextShowAt: timePtr(ps.NextShowAt), Impressions: ps.Impressions,
		LastImpressionAt: timePtr(ps.LastImpressionAt), LastClickAt: timePtr(ps.LastClickAt), LastCloseAt: timePtr(ps.LastCloseAt)}
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
		// Redis (or, after a Redis miss, MySQL) cannot give the state now: a 503 to retry, not a
		// 500; logged once here since the client sees only the code.
		a.Log.Warn("read user state", "err", err)
		writeError(c, a.Log, errStateUnavailable)
		return
	}
	views := []popupStateView{}
	for id, ps := range st.Popups {
		views = append(views, stateView(id, ps))
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
