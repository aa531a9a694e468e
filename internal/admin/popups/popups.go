package popups

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/changelog"
	"popupsvc/internal/decide"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/popuplist"
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
	Find(ctx context.Context, q popuplist.Query) (popuplist.Page, error)
	Get(ctx context.Context, id int64) (popup.Popup, error)
	Create(ctx context.Context, actor popup.Actor, p popup.Popup) (popup.Popup, error)
	Update(ctx context.Context, actor popup.Actor, id int64, p popup.Popup, opts popup.UpdateOptions) (stored popup.Popup, changed bool, err error)
	Transition(ctx context.Context, actor popup.Actor, id int64, t popup.ExperimentTransition, ifRevision []int64) (popup.Popup, error)
	Archive(ctx context.Context, actor popup.Actor, id int64, ifRevision []int64) (popup.Popup, error)
	Rollback(ctx context.Context, actor popup.Actor, id, toRevision int64, opts popup.UpdateOptions) (stored popup.Popup, changed bool, err error)
	History(ctx context.Context, id int64) ([]popup.Revision, error)
	Audit(ctx context.Context, q changelog.AuditQuery) ([]changelog.AuditEntry, error)
	Import(ctx context.Context, actor popup.Actor, ps []popup.Popup, opts popup.ImportOptions) (popup.ImportResult, error)
}

// maxAdminBody bounds popup bodies (content is up to 4000 characters, plus targeting lists).
const maxAdminBody = 1 << 20

var errPopupTooLarge = httpapi.NewError(httpapi.Problem{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: "popup body over 1 MiB"})

// readPopup reads, decodes and validates a popup body. pathID is the id of a PUT's path (0 for
// a POST): a body id that differs from it is refused, since the client meant another popup.
// keepGoal: the body's experiment does not name its primary goal (an update keeps the stored one).
// The error is an *httpapi.Error or a *popup.ValidationError naming the fields.
func (a *API) readPopup(c *gin.Context, pathID int64) (p popup.Popup, keepGoal bool, err error) {
	raw, aerr := httpapi.ReadBody(c, maxAdminBody, errPopupTooLarge)
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

// writePopup answers with one popup and its revision as the ETag.
func (a *API) writePopup(c *gin.Context, status int, p popup.Popup) {
	c.Header("ETag", httpapi.ETag(p.Revision))
	c.JSON(status, toWire(p, a.Now()))
}

// save runs one popup write, logs it (operator, role, action, popup, revision; never a token),
// propagates it to every instance and answers with the stored popup. A write that changed
// nothing (changed false) is answered with the stored popup alone: nothing to log or propagate.
func (a *API) save(c *gin.Context, status int, action popup.ChangeKind, write func(ctx context.Context, by popup.Actor) (stored popup.Popup, changed bool, err error)) {
	by := httpapi.Actor(c)
	stored, changed, err := write(c.Request.Context(), by)
	if err != nil {
		a.Fail(c, err)
		return
	}
	if changed {
		a.Log.Info("popup written", "operator", by.Name, "role", by.Role.String(), "action", string(action), "popup_id", stored.ID, "revision", stored.Revision)
		a.Propagate(c.Request.Context())
	}
	a.writePopup(c, status, stored)
}

// alwaysChanges adapts a write that always changes the popup (a create, an archive) to save.
func alwaysChanges(p popup.Popup, err error) (popup.Popup, bool, error) { return p, err == nil, err }

func (a *API) create(c *gin.Context) {
	p, _, err := a.readPopup(c, 0)
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.save(c, http.StatusCreated, popup.ChangeCreate, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		return alwaysChanges(a.Repo.Create(ctx, by, p))
	})
}

func (a *API) update(c *gin.Context) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	accept, aerr := httpapi.ParseFlag("accept_reassignment", c.Query("accept_reassignment"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	end, aerr := httpapi.ParseFlag("end_experiment", c.Query("end_experiment"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	p, keepGoal, err := a.readPopup(c, id)
	if err != nil {
		a.Fail(c, err)
		return
	}
	opts := popup.UpdateOptions{IfRevision: httpapi.IfMatch(c), AcceptReassignment: accept, EndExperiment: end, KeepPrimaryGoal: keepGoal}
	a.save(c, http.StatusOK, popup.ChangeUpdate, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		return a.Repo.Update(ctx, by, id, p, opts)
	})
}

// transition answers POST /admin/v1/popups/{id}/experiment/{start,stop,conclude}: the popup's
// experiment changes status (a conclude ships the variant its body names), as one write.
func (a *API) transition(action popup.ChangeKind) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, aerr := httpapi.PopupID(c)
		if aerr != nil {
			a.Fail(c, aerr)
			return
		}
		t := popup.ExperimentTransition{Action: action}
		if action == popup.ChangeExperimentConclude {
			var body struct {
				Variant *string `json:"variant"`
			}
			if aerr := httpapi.ReadSmallJSON(c, 4<<10, &body); aerr != nil {
				a.Fail(c, aerr)
				return
			}
			if body.Variant == nil {
				a.Fail(c, httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "validation_failed", Message: "variant is required",
					Fields: []popup.FieldError{{Field: "variant", Message: "is required: the key of the variant to ship"}}}))
				return
			}
			t.Variant = *body.Variant
		}
		revs := httpapi.IfMatch(c)
		a.save(c, http.StatusOK, action, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
			return alwaysChanges(a.Repo.Transition(ctx, by, id, t, revs))
		})
	}
}

func (a *API) archive(c *gin.Context) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	revs := httpapi.IfMatch(c)
	a.save(c, http.StatusOK, popup.ChangeArchive, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		return alwaysChanges(a.Repo.Archive(ctx, by, id, revs))
	})
}

// popupOf reads the popup the path's {id} names; false: the error is answered.
func (a *API) popupOf(c *gin.Context) (popup.Popup, bool) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return popup.Popup{}, false
	}
	p, err := a.Repo.Get(c.Request.Context(), id)
	if err != nil {
		a.Fail(c, err)
		return popup.Popup{}, false
	}
	return p, true
}

func (a *API) get(c *gin.Context) {
	p, ok := a.popupOf(c)
	if !ok {
		return
	}
	a.writePopup(c, http.StatusOK, p)
}

// errPreviewUnavailable: no config loaded yet, or the user's state cannot be read.
var errPreviewUnavailable = httpapi.NewError(httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the config or the user's state cannot be read now; retry later"})

// preview explains the decision for a user without recording anything, through the same
// decision code as the homepage (decide.Explain).
func (a *API) preview(c *gin.Context) {
	req, aerr := httpapi.ParseRequest(c.Query("uid"), c.Query("platform"), c.Query("app_version"), c.Query("region"), c.Query("lang"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	if req.Where, aerr = httpapi.ParseWhere(c.Request.URL.RawQuery); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	a.explain(c, req, a.Now(), decide.ExplainOptions{})
}

// explain answers a preview (GET and POST): the decision for req at now with its candidates,
// recording nothing.
func (a *API) explain(c *gin.Context, req popup.Request, now time.Time, opts decide.ExplainOptions) {
	ex, err := a.Decider.Explain(c.Request.Context(), req, now, opts)
	if err != nil {
		if errors.Is(err, decide.ErrUnavailable) {
			err = errPreviewUnavailable
		}
		a.Fail(c, err)
		return
	}
	var shown json.RawMessage = []byte("null")
	if ex.Shown != nil {
		shown = ex.Shown
	}
	answer := gin.H{"popup": shown, "config_version": ex.Version, "candidates": candidatesToWire(ex.Candidates),
		"placement": ex.Placement} // the placement decided for; "event" the event, when the request carried one
	if ex.Event != "" {
		answer["event"] = ex.Event
	}
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
