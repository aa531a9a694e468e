// Package users is the admin slice of one user's data: the state the popups keep of them
// (GET /admin/v1/users/{uid}/state) and their personal data's erasure and export
// (docs/CONTRACT.md §12).
package users

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
)

// A user's erasure and export on the admin API (docs/CONTRACT.md §12), an admin's. Neither the
// answers nor the logs of these routes print the uid, except the export, whose answer is about
// the uid.

// API serves a user's state and personal data.
type API struct {
	*httpapi.Shared
	Users    UserStates
	Erasures Erasures
	Exports  Exports
}

// Register adds the user routes: reading a user's state is every operator's; erasing and
// exporting their personal data are an admin's.
func (a *API) Register(g *gin.RouterGroup) {
	admin := func(what string) gin.HandlerFunc { return a.Require(popup.RoleAdmin, what) }
	g.GET("/users/:uid/state", a.userState)
	g.DELETE("/users/:uid", admin("erasing a user"), a.eraseUser)
	g.GET("/users/:uid/export", admin("exporting a user's data"), a.exportUser)
	g.GET("/erasures/:id", admin("reading an erasure"), a.erasure)
}

// UserStates reads a user's state (redisstore.UserStore).
type UserStates interface {
	Get(ctx context.Context, uid string, now time.Time) (popup.StoredState, error)
}

// errStateUnavailable: the user's state cannot be read (Redis down, or MySQL after a Redis miss).
var errStateUnavailable = httpapi.NewError(httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the user's state cannot be read now; retry later"})

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
	return popupStateView{PopupID: id, NextShowAt: httpapi.TimePtr(ps.NextShowAt), Impressions: ps.Impressions,
		LastImpressionAt: httpapi.TimePtr(ps.LastImpressionAt), LastClickAt: httpapi.TimePtr(ps.LastClickAt), LastCloseAt: httpapi.TimePtr(ps.LastCloseAt)}
}

func (a *API) userState(c *gin.Context) {
	uid := c.Param("uid")
	if !popup.ValidUID(uid) {
		a.Fail(c, httpapi.ErrUIDMalformed)
		return
	}
	now := a.Now()
	st, err := a.Users.Get(c.Request.Context(), uid, now)
	if err != nil {
		// Redis (or, after a Redis miss, MySQL) cannot give the state now: a 503 to retry, not a
		// 500; logged once here since the client sees only the code.
		a.Log.Warn("read user state", "err", err)
		a.Fail(c, errStateUnavailable)
		return
	}
	views := []popupStateView{}
	for _, e := range st.Popups { // in id order
		views = append(views, stateView(e.ID, e.PopupState))
	}
	c.JSON(http.StatusOK, gin.H{"uid": uid, "impressions_today": st.ImpressionsOn(now), "popups": views})
}

// Erasures records erasure requests and reads their status (privacy.Eraser); popup-worker runs
// them.
type Erasures interface {
	Request(ctx context.Context, actor popup.Actor, uid string) (string, error)
	Status(ctx context.Context, id string) (privacy.Erasure, error)
}

// Exports builds a user's export (privacy.Exporter).
type Exports interface {
	Export(ctx context.Context, actor popup.Actor, uid string) (privacy.Export, error)
}

var (
	errErasureOff = httpapi.NewError(httpapi.Problem{Status: http.StatusNotImplemented, Code: "erasure_not_configured",
		Message: "erasures are off on this deployment: POPUP_PRIVACY_KEY is not set"})
	errErasureID = httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "invalid_erasure_id", Message: "erasure id must be 32 lowercase hex characters",
		Fields: []popup.FieldError{{Field: "id", Message: "must be 32 lowercase hex characters, as the erasure request answered"}}})
	errPathUID = httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "invalid_uid", Message: "uid must be " + popup.UIDRule,
		Fields: []popup.FieldError{{Field: "uid", Message: "must be " + popup.UIDRule}}})
	errErasureNotFound = httpapi.NewError(httpapi.Problem{Status: http.StatusNotFound, Code: "erasure_not_found", Message: "no such erasure"})
)

// privacyError maps the use case's errors to their answers; anything else goes to writeError.
func privacyError(err error) error {
	switch {
	case errors.Is(err, privacy.ErrNotConfigured):
		return errErasureOff
	case errors.Is(err, privacy.ErrNotFound):
		return errErasureNotFound
	}
	return err
}

// pathUID is the path's {uid}; false, answered with a 400 naming uid, when it is not a uid.
func (a *API) pathUID(c *gin.Context) (string, bool) {
	uid := c.Param("uid")
	if !popup.ValidUID(uid) {
		a.Fail(c, errPathUID)
		return "", false
	}
	return uid, true
}

// eraseUser answers DELETE /admin/v1/users/{uid}: 202 with the erasure's id, which popup-worker
// completes within a minute.
func (a *API) eraseUser(c *gin.Context) {
	uid, ok := a.pathUID(c)
	if !ok {
		return
	}
	id, err := a.Erasures.Request(c.Request.Context(), httpapi.Actor(c), uid)
	if err != nil {
		a.Fail(c, privacyError(err))
		return
	}
	by := httpapi.Actor(c)
	a.Log.Info("erasure requested", "operator", by.Name, "role", by.Role.String(), "erasure_id", id)
	c.Header("Location", "/admin/v1/erasures/"+id)
	c.JSON(http.StatusAccepted, gin.H{"erasure_id": id})
}

// erasureWire is an erasure's status on the wire.
type erasureWire struct {
	ID          string           `json:"erasure_id"`
	Status      string           `json:"status"`
	RequestedAt time.Time        `json:"requested_at"`
	DoneAt      *time.Time       `json:"done_at"`
	Removed     map[string]int64 `json:"removed"`
}

func (a *API) erasure(c *gin.Context) {
	id := c.Param("id")
	if !privacy.ValidID(id) {
		a.Fail(c, errErasureID)
		return
	}
	e, err := a.Erasures.Status(c.Request.Context(), id)
	if err != nil {
		a.Fail(c, privacyError(err))
		return
	}
	c.JSON(http.StatusOK, erasureWire{ID: e.ID, Status: string(e.Status), RequestedAt: e.RequestedAt, DoneAt: httpapi.TimePtr(e.DoneAt), Removed: e.Removed})
}

// exportWire is a user's export on the wire: every list present, empty when there is nothing.
type exportWire struct {
	UID         string              `json:"uid"`
	ExportedAt  time.Time           `json:"exported_at"`
	State       []popupStateView    `json:"state"`
	Actions     []actionWire        `json:"actions"`
	Experiments []experimentWire    `json:"experiments"`
	Audiences   []membershipWire    `json:"audiences"`
	Conversions []conversionRowWire `json:"conversions"`
	Goals       []goalRowWire       `json:"goal_attribution"`
	Uploads     []uploadRowWire     `json:"audience_uploads"`
	Kept        []keptWire          `json:"erasure_keeps"`
}

type goalRowWire struct {
	PopupID     int64     `json:"popup_id"`
	Salt        string    `json:"salt"`
	Goal        string    `json:"goal"`
	Arm         string    `json:"arm"`
	Conversions int64     `json:"conversions"`
	ValueSum    float64   `json:"value_sum"`
	FirstAt     time.Time `json:"first_at"`
}

type uploadRowWire struct {
	AudienceID int64  `json:"audience_id"`
	UploadID   int64  `json:"upload_id"`
	Part       int    `json:"part"`
	Version    *int64 `json:"version"` // null: staged
}

// keptWire is a documented leftover: rows that name the uid and that an erasure keeps.
type keptWire struct {
	Table   string `json:"table"`
	PopupID int64  `json:"popup_id"`
	Rows    int64  `json:"rows"`
	Why     string `json:"why"`
}

// keptWhy says why an erasure keeps the rows of each table privacy.Kept names (docs/SECURITY.md).
var keptWhy = map[string]string{
	"popup_config":   "a QA uid an operator typed into the popup's targeting.uids (also in the Redis config cache): not erased; remove it from the popup",
	"popup_revision": "the popup's revisions that had the uid in targeting.uids: kept with the popup's history",
	"popup_audit":    "the popup's audit entries whose before or after had the uid in targeting.uids: kept with the audit log",
}

type conversionRowWire struct {
	Goal    string    `json:"goal"`
	EventID string    `json:"event_id"`
	Value   float64   `json:"value"`
	At      time.Time `json:"at"`
}

type actionWire struct {
	PopupID    int64     `json:"popup_id"`
	Action     string    `json:"action"`
	At         time.Time `json:"at"`
	EventID    string    `json:"event_id"`
	DecisionID string    `json:"decision_id"`
	Button     *int      `json:"button"`
}

type experimentWire struct {
	PopupID        int64      `json:"popup_id"`
	Salt           string     `json:"salt"`
	Arm            string     `json:"arm"`
	FirstExposedAt time.Time  `json:"first_exposed_at"`
	Exposures      int64      `json:"exposures"`
	Clicks         int64      `json:"clicks"`
	Closes         int64      `json:"closes"`
	FirstClickAt   *time.Time `json:"first_click_at"`
}

type membershipWire struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
}

func exportToWire(x privacy.Export) exportWire {
	out := exportWire{UID: x.UID, ExportedAt: x.ExportedAt, State: make([]popupStateView, len(x.State)),
		Actions: make([]actionWire, len(x.Actions)), Experiments: make([]experimentWire, len(x.Experiments)),
		Audiences: make([]membershipWire, len(x.Audiences)), Conversions: make([]conversionRowWire, len(x.Conversions))}
	for i, c := range x.Conversions {
		out.Conversions[i] = conversionRowWire{Goal: c.Goal, EventID: c.EventID, Value: c.Value, At: c.At.UTC()}
	}
	for i, s := range x.State {
		out.State[i] = stateView(s.PopupID, s.PopupState)
	}
	for i, r := range x.Actions {
		out.Actions[i] = actionWire{PopupID: r.PopupID, Action: r.Action, At: r.At, EventID: r.EventID, DecisionID: r.DecisionID}
		if r.Button >= 0 {
			b := r.Button
			out.Actions[i].Button = &b
		}
	}
	for i, r := range x.Experiments {
		out.Experiments[i] = experimentWire{PopupID: r.PopupID, Salt: r.Salt, Arm: r.Arm, FirstExposedAt: r.FirstExposedAt,
			Exposures: r.Exposures, Clicks: r.Clicks, Closes: r.Closes, FirstClickAt: httpapi.TimePtr(r.FirstClickAt)}
	}
	for i, m := range x.Audiences {
		out.Audiences[i] = membershipWire{ID: m.AudienceID, Name: m.Name, Version: m.Version}
	}
	out.Goals = make([]goalRowWire, len(x.Goals))
	for i, g := range x.Goals {
		out.Goals[i] = goalRowWire{PopupID: g.PopupID, Salt: g.Salt, Goal: g.Goal, Arm: g.Arm, Conversions: g.Conversions,
			ValueSum: g.ValueSum, FirstAt: g.FirstAt.UTC()}
	}
	out.Uploads = make([]uploadRowWire, len(x.Uploads))
	for i, u := range x.Uploads {
		out.Uploads[i] = uploadRowWire{AudienceID: u.AudienceID, UploadID: u.UploadID, Part: u.Part}
		if u.Version > 0 {
			v := u.Version
			out.Uploads[i].Version = &v
		}
	}
	out.Kept = make([]keptWire, len(x.Kept))
	for i, k := range x.Kept {
		out.Kept[i] = keptWire{Table: k.Table, PopupID: k.PopupID, Rows: k.Rows, Why: keptWhy[k.Table]}
	}
	return out
}

// exportUser answers GET /admin/v1/users/{uid}/export: everything held about the uid.
func (a *API) exportUser(c *gin.Context) {
	uid, ok := a.pathUID(c)
	if !ok {
		return
	}
	x, err := a.Exports.Export(c.Request.Context(), httpapi.Actor(c), uid)
	if err != nil {
		a.Fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, exportToWire(x))
}
