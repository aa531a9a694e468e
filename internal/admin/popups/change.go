package popups

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/changelog"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
	"popupsvc/internal/popuplist"
)

// Change control on the admin API: paginated list, history and rollback, audit log, export and
// import (docs/CONTRACT.md, "Operators: change control").

// Page sizes of the list and the audit log.
const (
	listDefaultLimit  = 100
	listMaxLimit      = 1000
	auditDefaultLimit = 50
	auditMaxLimit     = 500
	// maxImportBody bounds an import: 10,000 popups of a few KiB each.
	maxImportBody = 64 << 20
)

// list answers one page of popups in the order of sort (id by default), filtered by status,
// campaign state and a search of name, title, content and id, with the number of popups the
// filters match over every page.
func (a *API) list(c *gin.Context) {
	includeArchived, aerr := httpapi.ParseFlag("include_archived", c.Query("include_archived"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	q := popuplist.Query{IncludeArchived: includeArchived, Search: c.Query("q"), Now: a.Now()}
	if s, ok := c.GetQuery("status"); ok {
		if q.Status = popup.Status(s); !q.Status.Valid() {
			a.Fail(c, httpapi.QueryError("status", "must be active, draft, paused or archived"))
			return
		}
	}
	if s, ok := c.GetQuery("state"); ok {
		if q.State = popup.CampaignState(s); !q.State.Valid() {
			a.Fail(c, httpapi.QueryError("state", "must be draft, scheduled, running, paused, ended or archived"))
			return
		}
	}
	if q.Experiment = popuplist.ExperimentFilter(c.Query("experiment")); !q.Experiment.Valid() {
		a.Fail(c, httpapi.QueryError("experiment", "must be any, none, draft, running, stopped or concluded"))
		return
	}
	if len([]rune(q.Search)) > 200 {
		a.Fail(c, httpapi.QueryError("q", "must be at most 200 characters"))
		return
	}
	var ok bool
	if q.Sort, ok = popuplist.ParseSort(c.Query("sort")); !ok {
		a.Fail(c, httpapi.QueryError("sort", "must be id, updated_at, name or priority, optionally prefixed by - for descending"))
		return
	}
	if v, given := c.GetQuery("cursor"); given {
		if q.After, ok = decodeCursor(v, q.Sort); !ok {
			a.Fail(c, httpapi.QueryError("cursor", "must be the next value of a previous page of the same sort"))
			return
		}
	}
	if q.Limit, aerr = httpapi.LimitParam(c, listDefaultLimit, listMaxLimit); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	limit := q.Limit
	q.Limit++ // one more tells whether there is a next page
	page, err := a.Repo.Find(c.Request.Context(), q)
	if err != nil {
		a.Fail(c, err)
		return
	}
	var next *string
	ps := page.Popups
	if len(ps) > limit {
		ps = ps[:limit]
		cursor := encodeCursor(ps[limit-1], q.Sort)
		next = &cursor
	}
	out := make([]adminPopup, len(ps))
	for i, p := range ps {
		out[i] = toWire(p, q.Now)
	}
	c.JSON(http.StatusOK, gin.H{"popups": out, "next": next, "total": page.Total})
}

// listCursor is where a page of the list ends: the sort it belongs to, the last popup's id and
// its value of the sort key (only that one is set). Clients see it as an opaque string.
type listCursor struct {
	Sort      string     `json:"s"`
	ID        int64      `json:"id"`
	UpdatedAt *time.Time `json:"u,omitempty"`
	Name      *string    `json:"n,omitempty"`
	Priority  *int       `json:"p,omitempty"`
}

// encodeCursor is the cursor of the page after p in sort order: base64url of listCursor's JSON.
func encodeCursor(p popup.Popup, sort popuplist.Sort) string {
	c := listCursor{Sort: sort.String(), ID: p.ID}
	switch sort.Key {
	case popuplist.SortByUpdatedAt:
		c.UpdatedAt = &p.UpdatedAt
	case popuplist.SortByName:
		c.Name = &p.Name
	case popuplist.SortByPriority:
		c.Priority = &p.Priority
	}
	raw, _ := json.Marshal(c) // a struct of strings, numbers and a time: cannot fail
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeCursor reads a cursor of a page of the list sorted by sort; ok is false for anything
// else (garbage, or a cursor of another sort, which would skip or repeat popups). A positive
// decimal id, the cursor before lists could be sorted, still continues the list in id order.
func decodeCursor(v string, sort popuplist.Sort) (pos *popuplist.Position, ok bool) {
	if sort == (popuplist.Sort{Key: popuplist.SortByID}) {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			return &popuplist.Position{ID: id}, id > 0
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return nil, false
	}
	var c listCursor
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&c) != nil || c.Sort != sort.String() || c.ID <= 0 {
		return nil, false
	}
	pos = &popuplist.Position{ID: c.ID}
	switch sort.Key {
	case popuplist.SortByUpdatedAt:
		ok = c.UpdatedAt != nil
		if ok {
			pos.UpdatedAt = *c.UpdatedAt
		}
	case popuplist.SortByName:
		ok = c.Name != nil
		if ok {
			pos.Name = *c.Name
		}
	case popuplist.SortByPriority:
		ok = c.Priority != nil
		if ok {
			pos.Priority = *c.Priority
		}
	default:
		ok = true
	}
	return pos, ok
}

type revisionView struct {
	Revision int64      `json:"revision"`
	At       time.Time  `json:"at"`
	Actor    string     `json:"actor"`
	Role     *string    `json:"role"`
	Popup    adminPopup `json:"popup"`
}

// roleWire is a recorded role as the history and the audit log answer it: null for a write from
// before roles were recorded.
func roleWire(r popup.Role) *string {
	if !r.Valid() {
		return nil
	}
	s := r.String()
	return &s
}

func (a *API) history(c *gin.Context) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	now := a.Now()
	revs, err := a.Repo.History(c.Request.Context(), id)
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := make([]revisionView, len(revs))
	for i, r := range revs {
		out[i] = revisionView{Revision: r.Revision, At: r.At, Actor: r.Actor, Role: roleWire(r.Role), Popup: toWire(r.Popup, now)}
	}
	c.JSON(http.StatusOK, gin.H{"revisions": out})
}

// rollback writes an old revision's content as the popup's new revision.
func (a *API) rollback(c *gin.Context) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	end, aerr := httpapi.ParseFlag("end_experiment", c.Query("end_experiment"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	var body struct {
		Revision *int64 `json:"revision"`
	}
	if aerr := httpapi.ReadSmallJSON(c, 4<<10, &body); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	if body.Revision == nil || *body.Revision <= 0 {
		a.Fail(c, httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "validation_failed", Message: "revision must be a positive integer",
			Fields: []popup.FieldError{{Field: "revision", Message: "must be a positive integer, the revision to roll back to"}}}))
		return
	}
	to, opts := *body.Revision, popup.UpdateOptions{IfRevision: httpapi.IfMatch(c), EndExperiment: end}
	a.save(c, http.StatusOK, popup.ChangeRollback, func(ctx context.Context, by popup.Actor) (popup.Popup, bool, error) {
		return a.Repo.Rollback(ctx, by, id, to, opts)
	})
}

type auditView struct {
	ID       int64       `json:"id"`
	At       time.Time   `json:"at"`
	Actor    string      `json:"actor"`
	Role     *string     `json:"role"`
	Action   string      `json:"action"`
	PopupID  int64       `json:"popup_id"`
	Revision int64       `json:"revision"`
	Before   *adminPopup `json:"before"`
	After    *adminPopup `json:"after"`
}

func wirePtr(p *popup.Popup, now time.Time) *adminPopup {
	if p == nil {
		return nil
	}
	w := toWire(*p, now)
	return &w
}

func (a *API) audit(c *gin.Context) {
	var (
		q    changelog.AuditQuery
		aerr *httpapi.Error
	)
	if q.PopupID, aerr = httpapi.PositiveParam(c, "popup_id"); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	if actor, ok := c.GetQuery("actor"); ok {
		if !operator.ValidName(actor) {
			a.Fail(c, httpapi.QueryError("actor", "must be an operator name: "+operator.NameRule))
			return
		}
		q.Actor = actor
	}
	if q.Before, aerr = httpapi.PositiveParam(c, "before"); aerr != nil {
		a.Fail(c, httpapi.QueryError("before", "must be the next value of a previous page"))
		return
	}
	if q.Limit, aerr = httpapi.LimitParam(c, auditDefaultLimit, auditMaxLimit); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	limit := q.Limit
	q.Limit++ // one more tells whether there is a next page
	entries, err := a.Repo.Audit(c.Request.Context(), q)
	if err != nil {
		a.Fail(c, err)
		return
	}
	entries, next := httpapi.NextPage(entries, limit, func(e changelog.AuditEntry) int64 { return e.ID })
	out := make([]auditView, len(entries))
	now := a.Now()
	for i, e := range entries {
		out[i] = auditView{ID: e.ID, At: e.At, Actor: e.Actor, Role: roleWire(e.Role), Action: string(e.Action), PopupID: e.PopupID,
			Revision: e.Revision, Before: wirePtr(e.Before, now), After: wirePtr(e.After, now)}
	}
	c.JSON(http.StatusOK, gin.H{"entries": out, "next": next})
}

// export answers every popup that is not archived, in the shape import takes.
func (a *API) export(c *gin.Context) {
	ps, err := a.Repo.List(c.Request.Context(), false)
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := make([]adminPopup, len(ps))
	now := a.Now()
	for i, p := range ps {
		out[i] = toWire(p, now)
	}
	c.JSON(http.StatusOK, gin.H{"popups": out})
}

// importPopups validates a whole export-shaped body, then applies it in one transaction.
func (a *API) importPopups(c *gin.Context) {
	dryRun, aerr := httpapi.ParseFlag("dry_run", c.Query("dry_run"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	end, aerr := httpapi.ParseFlag("end_experiment", c.Query("end_experiment"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	var body struct {
		Popups *[]json.RawMessage `json:"popups"`
	}
	if aerr := httpapi.ReadSmallJSON(c, maxImportBody, &body); aerr != nil {
		a.Fail(c, aerr)
		return
	}
	if body.Popups == nil {
		a.Fail(c, httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "invalid_json", Message: "popups must be an array of popups",
			Fields: []popup.FieldError{{Field: "popups", Message: "must be an array of popups (the shape GET /admin/v1/export answers)"}}}))
		return
	}
	ps, keepGoals, err := a.buildImport(*body.Popups)
	if err != nil {
		a.Fail(c, err)
		return
	}
	by := httpapi.Actor(c)
	res, err := a.Repo.Import(c.Request.Context(), by, ps, popup.ImportOptions{DryRun: dryRun, EndExperiment: end, KeepPrimaryGoal: keepGoals})
	if err != nil {
		a.Fail(c, err)
		return
	}
	if !dryRun && res.Created+res.Updated > 0 {
		a.Log.Info("popups imported", "operator", by.Name, "role", by.Role.String(), "action", string(popup.ChangeImport),
			"created", res.Created, "updated", res.Updated, "unchanged", res.Unchanged)
		a.Propagate(c.Request.Context())
	}
	c.JSON(http.StatusOK, gin.H{"created": res.Created, "updated": res.Updated, "unchanged": res.Unchanged, "dry_run": dryRun})
}

// buildImport decodes and validates every popup of an import; the error names each bad popup
// (popups[i], and its name) with its fields, all at once. Popups are matched by name, so a name
// twice is refused, and so is an archived popup (export never holds one; archive with DELETE).
// keepGoals says, per popup, that its experiment does not name its primary goal.
func (a *API) buildImport(raws []json.RawMessage) (ps []popup.Popup, keepGoals []bool, err error) {
	var fields []popup.FieldError
	add := func(i int, name string, fes []popup.FieldError) {
		for _, fe := range fes {
			fields = append(fields, popup.FieldError{Field: fmt.Sprintf("popups[%d].%s", i, fe.Field),
				Message: fmt.Sprintf("popup %d (%q): %s", i, name, fe.Message)})
		}
	}
	out := make([]popup.Popup, 0, len(raws))
	seen := make(map[string]int, len(raws))
	for i, raw := range raws {
		in, err := decodePopupBody(raw)
		var ae *httpapi.Error
		if errors.As(err, &ae) {
			fes := ae.Fields()
			if len(fes) == 0 {
				fes = []popup.FieldError{{Field: "", Message: ae.Message()}}
			}
			add(i, in.Name, fes)
			continue
		}
		p, err := fromWire(in).BuildWith(a.Links)
		var ve *popup.ValidationError
		if errors.As(err, &ve) {
			add(i, in.Name, ve.Fields)
			continue
		} else if err != nil {
			return nil, nil, err
		}
		if p.Status == popup.StatusArchived {
			add(i, p.Name, []popup.FieldError{{Field: "status", Message: "import does not archive popups: leave it out or archive with DELETE"}})
		}
		if j, dup := seen[p.Name]; dup {
			add(i, p.Name, []popup.FieldError{{Field: "name", Message: fmt.Sprintf("is also the name of popups[%d]; popups are matched by name", j)}})
		}
		seen[p.Name] = i
		out = append(out, p)
		keepGoals = append(keepGoals, in.keepsPrimaryGoal())
	}
	if len(fields) > 0 {
		for i := range fields {
			fields[i].Field = strings.TrimSuffix(fields[i].Field, ".")
		}
		return nil, nil, httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "validation_failed",
			Message: fmt.Sprintf("import refused, nothing written: %d problem(s), first: %s %s", len(fields), fields[0].Field, fields[0].Message),
			Fields:  fields})
	}
	return out, keepGoals, nil
}
