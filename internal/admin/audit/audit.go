// Package audit is the admin slice of the audit log's changes besides popups'
// (GET /admin/v1/audit/changes?resource=): who changed which audience, goal, setting or holdout
// phase, and when. The popups' audit (GET /admin/v1/audit, each popup before and after) is the
// popups slice's.
package audit

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// API serves the audit log: a read, every operator's.
type API struct {
	*httpapi.Shared
	Changes ChangeLog
}

// ChangeLog reads the changes of audiences, goals, settings and the holdout
// (mysqlstore.ChangeLog), newest first.
type ChangeLog interface {
	Changes(ctx context.Context, q popup.ResourceChangeQuery) ([]popup.ResourceChange, error)
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

// changeWire is one change on the wire. version is an audience's or goal's (null for the
// others); added, removed and size an audience's; before and after a setting's values, or the
// holdout's percentage.
type changeWire struct {
	ID       int64     `json:"id"`
	Resource string    `json:"resource"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor"`
	Role     *string   `json:"role"`
	Action   string    `json:"action"`
	Subject  string    `json:"subject"`
	Version  *int64    `json:"version"`
	Added    *int64    `json:"added"`
	Removed  *int64    `json:"removed"`
	Size     *int64    `json:"size"`
	Before   *string   `json:"before"`
	After    *string   `json:"after"`
}

func changeToWire(ch popup.ResourceChange) changeWire {
	w := changeWire{ID: ch.ID, Resource: string(ch.Resource), At: ch.At, Actor: ch.Actor.Name, Action: ch.Action,
		Subject: ch.Subject, Before: ch.Before, After: ch.After}
	if ch.Actor.Role.Valid() {
		r := ch.Actor.Role.String()
		w.Role = &r
	}
	switch ch.Resource {
	case popup.ChangeAudiences:
		w.Version, w.Added, w.Removed, w.Size = &ch.Version, &ch.Added, &ch.Removed, &ch.Size
	case popup.ChangeGoals:
		w.Version = &ch.Version
	}
	return w
}

// changes answers GET /admin/v1/audit/changes?resource=[&actor=][&before=][&limit=]: one page of
// the resource's changes, newest first, as GET /admin/v1/audit pages the popups'.
func (a *API) changes(c *gin.Context) {
	q := popup.ResourceChangeQuery{Resource: popup.ChangeResource(c.Query("resource"))}
	if !slices.Contains(popup.ChangeResources, q.Resource) {
		a.Fail(c, httpapi.QueryError("resource", "must be audiences, goals, settings or holdout"))
		return
	}
	if actor, ok := c.GetQuery("actor"); ok {
		if !popup.ValidOperatorName(actor) {
			a.Fail(c, httpapi.QueryError("actor", "must be an operator name: "+popup.OperatorNameRule))
			return
		}
		q.Actor = actor
	}
	var aerr *httpapi.Error
	if q.Before, aerr = httpapi.PositiveParam(c, "before"); aerr != nil {
		a.Fail(c, httpapi.QueryError("before", "must be the next value of a previous page"))
		return
	}
	limit, aerr := httpapi.LimitParam(c, defaultLimit, maxLimit)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	q.Limit = limit + 1 // one more tells whether there is a next page
	changes, err := a.Changes.Changes(c.Request.Context(), q)
	if err != nil {
		a.Fail(c, err)
		return
	}
	changes, next := httpapi.NextPage(changes, limit, func(ch popup.ResourceChange) int64 { return ch.ID })
	out := make([]changeWire, len(changes))
	for i, ch := range changes {
		out[i] = changeToWire(ch)
	}
	c.JSON(http.StatusOK, gin.H{"entries": out, "next": next})
}
