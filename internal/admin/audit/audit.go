// Package audit is the admin slice of the audit log's changes (GET /admin/v1/audit/changes): who
// changed which popup, experiment, audience, goal, setting, holdout phase, operator or privacy
// request, and when, one resource at a time or all merged. The popups' audit with each popup
// before and after (GET /admin/v1/audit) is the popups slice's.
package audit

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/changelog"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/operator"
)

// API serves the audit log: a read, every operator's.
type API struct {
	*httpapi.Shared
	Changes ChangeLog
}

// ChangeLog reads one resource's changes (mysqlstore.ChangeLog), newest first.
type ChangeLog interface {
	Changes(ctx context.Context, q changelog.ResourceChangeQuery) ([]changelog.ResourceChange, error)
}

// Register adds the change log's route.
func (a *API) Register(g *gin.RouterGroup) {
	g.GET("/audit/changes", a.changes)
}

// Page sizes of the audit log, as the popups' audit has them.
const (
	defaultLimit = 50
	maxLimit     = 500
)

// changeWire is one change on the wire. name is the subject's name (a popup's, an audience's,
// a goal's, a setting's, an operator's; null for the others); popup_id a popup's or an
// experiment's popup; version an audience's or goal's version or a popup's revision (null for
// the others); added, removed and size an audience's members (removed also what an erasure
// removed); before and after a setting's values, the holdout's percentage, an operator's roles or
// the variant a concluded experiment shipped.
type changeWire struct {
	ID       int64     `json:"id"`
	Resource string    `json:"resource"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor"`
	Role     *string   `json:"role"`
	Action   string    `json:"action"`
	Subject  string    `json:"subject"`
	Name     *string   `json:"name"`
	PopupID  *int64    `json:"popup_id"`
	Version  *int64    `json:"version"`
	Added    *int64    `json:"added"`
	Removed  *int64    `json:"removed"`
	Size     *int64    `json:"size"`
	Before   *string   `json:"before"`
	After    *string   `json:"after"`
}

func changeToWire(ch changelog.ResourceChange) changeWire {
	w := changeWire{ID: ch.ID, Resource: string(ch.Resource), At: ch.At, Actor: ch.Actor.Name, Action: ch.Action,
		Subject: ch.Subject, Before: ch.Before, After: ch.After}
	if ch.Actor.Role.Valid() {
		r := ch.Actor.Role.String()
		w.Role = &r
	}
	if ch.Name != "" {
		w.Name = &ch.Name
	}
	switch ch.Resource {
	case changelog.ChangePopups, changelog.ChangeExperiments:
		w.PopupID, w.Version = &ch.PopupID, &ch.Version
	case changelog.ChangeAudiences:
		w.Version, w.Added, w.Removed, w.Size = &ch.Version, &ch.Added, &ch.Removed, &ch.Size
	case changelog.ChangeGoals:
		w.Version = &ch.Version
	case changelog.ChangePrivacy:
		if ch.Action == changelog.PrivacyErased {
			w.Removed = &ch.Removed
		}
	}
	return w
}

// maxNameFilter bounds the name filter: no subject's name is longer.
const maxNameFilter = 400

// resourceRule is the resource parameter's rule in the words of its error.
var resourceRule = func() string {
	names := make([]string, len(changelog.ChangeResources))
	for i, r := range changelog.ChangeResources {
		names[i] = string(r)
	}
	return "must be all, " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}()

// changes answers GET /admin/v1/audit/changes[?resource=][&name=][&actor=][&before=][&limit=]: one
// page of a resource's changes, or of every resource's merged (resource all or absent), newest
// first, as GET /admin/v1/audit pages the popups'.
func (a *API) changes(c *gin.Context) {
	q := changelog.ResourceChangeQuery{Resource: changelog.ChangeResource(c.DefaultQuery("resource", string(changelog.ChangeAll)))}
	if q.Resource != changelog.ChangeAll && !slices.Contains(changelog.ChangeResources, q.Resource) {
		a.Fail(c, httpapi.QueryError("resource", resourceRule))
		return
	}
	if actor, ok := c.GetQuery("actor"); ok {
		if !operator.ValidName(actor) {
			a.Fail(c, httpapi.QueryError("actor", "must be an operator name: "+operator.NameRule))
			return
		}
		q.Actor = actor
	}
	if name, ok := c.GetQuery("name"); ok {
		if strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > maxNameFilter {
			a.Fail(c, httpapi.QueryError("name", "must be 1-"+strconv.Itoa(maxNameFilter)+" characters of the name to find"))
			return
		}
		q.Name = strings.TrimSpace(name)
	}
	limit, aerr := httpapi.LimitParam(c, defaultLimit, maxLimit)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	q.Limit = limit + 1 // one more tells whether there is a next page
	if q.Resource == changelog.ChangeAll {
		a.all(c, q, limit)
		return
	}
	if q.Before, aerr = httpapi.PositiveParam(c, "before"); aerr != nil {
		a.Fail(c, httpapi.QueryError("before", "must be the next value of a previous page"))
		return
	}
	changes, err := a.Changes.Changes(c.Request.Context(), q)
	if err != nil {
		a.Fail(c, err)
		return
	}
	changes, next := httpapi.NextPage(changes, limit, func(ch changelog.ResourceChange) int64 { return ch.ID })
	a.page(c, changes, next)
}

// all answers one page of every resource's changes merged (merge.go).
func (a *API) all(c *gin.Context, q changelog.ResourceChangeQuery, limit int) {
	var from *cursor
	if v, ok := c.GetQuery("before"); ok {
		cur, ok := parseCursor(v)
		if !ok {
			a.Fail(c, httpapi.QueryError("before", "must be the next value of a previous page"))
			return
		}
		from = &cur
	}
	pages := make([][]changelog.ResourceChange, len(changelog.ChangeResources))
	for rank, r := range changelog.ChangeResources {
		rq := q
		rq.Resource, rq.ByTime = r, true
		if from != nil {
			from.after(&rq, rank)
		}
		var err error
		if pages[rank], err = a.Changes.Changes(c.Request.Context(), rq); err != nil {
			a.Fail(c, err)
			return
		}
	}
	changes, next := merge(pages, limit)
	a.page(c, changes, next)
}

func (a *API) page(c *gin.Context, changes []changelog.ResourceChange, next *string) {
	out := make([]changeWire, len(changes))
	for i, ch := range changes {
		out[i] = changeToWire(ch)
	}
	c.JSON(http.StatusOK, gin.H{"entries": out, "next": next})
}
