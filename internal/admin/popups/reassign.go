package popups

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// reassignmentRequest is the body of POST …/experiment/reassignment: the popup as a PUT would send it.
type reassignmentRequest struct {
	Popup json.RawMessage `json:"popup"`
}

// experimentReassignment answers POST /admin/v1/popups/:id/experiment/reassignment: what a PUT of
// the popup with accept_reassignment=true would do to the users the current phase counted: how
// many there are, and how many of them its experiment's arms, under the phase's salt, put in
// another arm or out of the experiment (popup.Moves). It records nothing.
func (a *API) experimentReassignment(c *gin.Context) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	var body reassignmentRequest
	if aerr := httpapi.ReadSmallJSON(c, maxAdminBody, &body); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	next, err := a.readDraft(body.Popup)
	if err != nil {
		a.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	cur, err := a.storedExperiment(ctx, id)
	if err != nil {
		a.Fail(c, err)
		return
	}
	if next.Experiment == nil {
		a.Fail(c, prefixed("validation_failed", popup.FieldError{Field: "experiment", Message: "is required: the experiment whose arms would keep the assignment"}))
		return
	}
	m := popup.NewMoves(next.Experiment, cur.Salt)
	if cur.PhaseStartedAt != nil {
		if err := a.ExperimentDays.ExperimentUserArms(ctx, id, cur.Salt, m.Add); err != nil {
			a.Fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"popup_id": id, "phase": cur.Phase, "exposed_users": m.Users, "moved_users": m.Moved})
}

// storedExperiment is popup id's stored experiment: popup.ErrNotFound for no popup,
// errNoExperiment for a popup without one.
func (a *API) storedExperiment(ctx context.Context, id int64) (*popup.Experiment, error) {
	p, err := a.Repo.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.Experiment == nil {
		return nil, errNoExperiment
	}
	return p.Experiment, nil
}

var errNoExperiment = httpapi.NewError(httpapi.Problem{Status: http.StatusNotFound, Code: "experiment_missing", Message: "the popup has no experiment"})
