package popups

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/decide"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
	"popupsvc/internal/snapshot"
)

// draftPreviewRequest is the body of POST /admin/v1/preview: a homepage request and an unsaved
// popup in the admin input shape.
type draftPreviewRequest struct {
	UID        string `json:"uid"`
	Platform   string `json:"platform"`
	AppVersion string `json:"app_version"`
	Region     string `json:"region"`
	Lang       string `json:"lang"`
	// Placement, Event, EventProperties and Attrs are the decision's (POST /api/v1/decisions'
	// fields): the draft's placements, trigger and rules are previewed against them.
	Placement       string          `json:"placement"`
	Event           string          `json:"event"`
	EventProperties json.RawMessage `json:"event_properties"`
	Attrs           json.RawMessage `json:"attrs"`
	Popup           json.RawMessage `json:"popup"`
}

// previewDraft answers like GET /admin/v1/preview as if the draft popup were active alongside
// the live ones, recording nothing, through the homepage's decision code (decide.Explain). The
// draft is evaluated with the id it carries, replacing the live popup of that id (the preview of
// an edit: that popup's per-user state and bucket seed apply, and another seed is refused as a
// save would refuse it), or with id 0 when it has none (a new popup). Its rollout buckets are
// those of its bucket_seed, which the saved popup keeps, so the preview is what saving it will
// do; a new draft without a seed gets a fresh one, as a create would. Its status is taken as
// active; every other field counts as written.
func (a *API) previewDraft(c *gin.Context) {
	var body draftPreviewRequest
	if aerr := httpapi.ReadSmallJSON(c, maxAdminBody, &body); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	req, aerr := httpapi.ParseRequest(body.UID, body.Platform, body.AppVersion, body.Region, body.Lang)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	if req.Where, aerr = httpapi.DecodeWhere(body.Placement, body.Event, body.EventProperties, body.Attrs); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	draft, err := a.readDraft(body.Popup)
	if err != nil {
		a.Fail(c, err)
		return
	}
	live := a.Snapshots.Load()
	if live == nil {
		a.Fail(c, errPreviewUnavailable)
		return
	}
	now := a.Now()
	if err := a.keepDraftSeed(c.Request.Context(), live, &draft, now); err != nil {
		a.Fail(c, err)
		return
	}
	popups := make([]popup.Popup, 0, len(live.Ordered)+1)
	for _, cp := range live.Ordered {
		if cp.Popup.ID != draft.ID {
			popups = append(popups, cp.Popup)
		}
	}
	popups = append(popups, draft)
	snap := snapshot.BuildWith(live.Version, popups, now, a.Links, live.Audiences)
	a.explain(c, req, now, decide.ExplainOptions{Snapshot: snap})
}

// keepDraftSeed gives the draft the bucket seed saving it would, and its experiment the stored
// state (keepDraftExperiment): the stored popup's for the draft of an edit (from the snapshot, or from the store for a popup the snapshot does not hold,
// an archived one), refusing another; its own, or a fresh one, for a new popup.
func (a *API) keepDraftSeed(ctx context.Context, live *snapshot.Snapshot, draft *popup.Popup, now time.Time) error {
	var stored *popup.Popup
	if e := live.Entry(draft.ID); e != nil {
		stored = &e.Popup
	} else if draft.ID != 0 {
		p, err := a.Repo.Get(ctx, draft.ID)
		switch {
		case err == nil:
			stored = &p
		case !errors.Is(err, popup.ErrNotFound):
			return err
		}
	}
	if stored != nil {
		if err := draft.KeepBucketSeed(*stored); err != nil {
			return prefixed("validation_failed", popup.FieldError{Field: "bucket_seed", Message: err.Error()})
		}
		keepDraftExperiment(draft, stored, now)
	}
	draft.GiveBucketSeed()
	return nil
}

// keepDraftExperiment gives the draft's experiment the stored one's state (status, phase, salt),
// as saving it would (popup.KeepExperiment), so that a running experiment assigns the users of the
// preview as it assigns them now. A change of the arms is previewed as if the assignment were
// kept: the salt of a new phase is drawn only when it is saved. A draft that would change a
// concluded experiment (a save refuses it) is previewed with the stored status: nobody assigned.
func keepDraftExperiment(draft, stored *popup.Popup, now time.Time) {
	if draft.Experiment == nil || stored.Experiment == nil {
		return
	}
	if _, err := popup.KeepExperiment(draft.Experiment, stored.Experiment, true, now); err != nil {
		draft.Experiment.Status = stored.Experiment.Status
	}
}

// readDraft decodes and validates the draft; errors name its fields as popup.<field>.
func (a *API) readDraft(raw json.RawMessage) (popup.Popup, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return popup.Popup{}, httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "validation_failed", Message: "popup is required: the unsaved popup to preview",
			Fields: []popup.FieldError{{Field: "popup", Message: "is required: a popup in the shape POST /admin/v1/popups takes"}}})
	}
	in, err := decodePopupBody(raw)
	var ae *httpapi.Error
	if errors.As(err, &ae) {
		return popup.Popup{}, prefixedFields(ae.ErrCode(), ae.Message(), ae.Fields())
	}
	p, err := fromWire(in).BuildWith(a.Links)
	var ve *popup.ValidationError
	if errors.As(err, &ve) {
		return popup.Popup{}, prefixedFields("validation_failed", ve.Error(), ve.Fields)
	} else if err != nil {
		return popup.Popup{}, err
	}
	p.Status = popup.StatusActive
	if in.ID != nil {
		if *in.ID <= 0 {
			return popup.Popup{}, prefixed("validation_failed", popup.FieldError{Field: "id", Message: "must be a positive integer (a saved popup's id) or be left out"})
		}
		p.ID = *in.ID
	}
	return p, nil
}

// prefixedFields is a 400 about the draft: its fields named popup.<field>, or popup itself
// when none is named.
func prefixedFields(code, msg string, fes []popup.FieldError) *httpapi.Error {
	out := make([]popup.FieldError, len(fes))
	for i, fe := range fes {
		out[i] = popup.FieldError{Field: "popup." + fe.Field, Message: fe.Message}
	}
	if len(out) == 0 {
		out = []popup.FieldError{{Field: "popup", Message: msg}}
	}
	return httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: code, Message: "popup: " + msg, Fields: out})
}

// prefixed is a 400 about one field of the draft.
func prefixed(code string, fe popup.FieldError) *httpapi.Error {
	return prefixedFields(code, fe.Field+" "+fe.Message, []popup.FieldError{fe})
}

// candidateWire is one popup's verdict in a preview answer: why it would or would not show.
type candidateWire struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Priority int    `json:"priority"`
	Eligible bool   `json:"eligible"`
	Reason   string `json:"reason,omitempty"` // absent for the popup that would show
	// Audience is the audience an audience reason is about (absent for the other reasons).
	Audience int64 `json:"audience,omitempty"`
	// Trigger is the outcome of the popup's trigger conditions, when the request carries the
	// event it waits for (absent otherwise); Rules each of its rules' outcomes (absent without
	// rules), whatever the reason.
	Trigger *outcomeWire  `json:"trigger,omitempty"`
	Rules   []outcomeWire `json:"rules,omitempty"`
}

// outcomeWire is one rule's (or a trigger's) outcome for the request: held, or its first
// condition that failed (by index), the attribute, the operator, the value seen (absent when the
// request lacks the attribute) and why: missing, mistyped or false.
type outcomeWire struct {
	Matched   bool    `json:"matched"`
	Condition *int    `json:"condition,omitempty"`
	Attr      string  `json:"attr,omitempty"`
	Op        string  `json:"op,omitempty"`
	Seen      *string `json:"seen,omitempty"`
	Why       string  `json:"why,omitempty"`
}

func outcomeToWire(o rules.Outcome) outcomeWire {
	if o.Matched {
		return outcomeWire{Matched: true}
	}
	w := outcomeWire{Condition: &o.Condition, Attr: o.Attr, Op: string(o.Op), Why: string(o.Why)}
	if o.Present {
		w.Seen = &o.Seen
	}
	return w
}

func candidatesToWire(cs []popup.Candidate) []candidateWire {
	if cs == nil {
		return nil
	}
	out := make([]candidateWire, len(cs))
	for i, c := range cs {
		out[i] = candidateWire{ID: c.ID, Name: c.Name, Priority: c.Priority, Eligible: c.Eligible, Reason: string(c.Reason), Audience: c.Audience}
		if c.Trigger != nil {
			t := outcomeToWire(*c.Trigger)
			out[i].Trigger = &t
		}
		for _, r := range c.Rules {
			out[i].Rules = append(out[i].Rules, outcomeToWire(r))
		}
	}
	return out
}
