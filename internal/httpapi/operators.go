package httpapi

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
)

// Where auth leaves the authenticated operator in the gin context, and where writeError leaves a
// refusal for the admin router's refusal log (logRefusal).
const (
	actorCtxKey     = "popup.actor"
	forbiddenCtxKey = "popup.forbidden"
)

// Actor is the operator making the request, with its role (auth ran first).
func Actor(c *gin.Context) popup.Actor {
	a, _ := c.Get(actorCtxKey)
	act, _ := a.(popup.Actor)
	return act
}

// requireRole is the guard of a route that needs role need whatever its request: it answers 403
// (what needs the role, the operator's role) to an operator whose role is below it. Routes whose
// rights depend on the request and the stored popup (popup writes, import) are checked again in
// the write (internal/manage), where the stored popup is read (popup.Write.Needs).
func (a *Admin) requireRole(need popup.Role, what string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := Actor(c).Need(need, what); err != nil {
			writeError(c, a.Log, err)
		}
	}
}

// refusals counts and logs the admin API's 403s: popup_admin_forbidden_total{role_needed}.
type refusals struct{ total *prometheus.CounterVec }

func newRefusals(reg prometheus.Registerer) (*refusals, error) {
	r := &refusals{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "popup_admin_forbidden_total",
		Help: "Admin API requests refused (403) because the operator's role is below the role the request needs, by that role.",
	}, []string{"role_needed"})}
	for _, role := range []popup.Role{popup.RoleEditor, popup.RolePublisher, popup.RoleAdmin} {
		r.total.WithLabelValues(role.String()) // every series from the start, at 0
	}
	if reg != nil {
		if err := reg.Register(r.total); err != nil {
			return nil, fmt.Errorf("register popup_admin_forbidden_total: %w", err)
		}
	}
	return r, nil
}

// logRefusal is the admin middleware that, after the handler, logs a refused request at warn
// (operator, role, route, role needed; never a token) and counts it.
func (a *Admin) logRefusal(r *refusals) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		v, ok := c.Get(forbiddenCtxKey)
		if !ok {
			return
		}
		fe := v.(*popup.ForbiddenError)
		a.Log.Warn("admin request refused", "operator", fe.Actor.Name, "role", fe.Actor.Role.String(),
			"method", c.Request.Method, "route", c.FullPath(), "role_needed", fe.Needed.String())
		r.total.WithLabelValues(fe.Needed.String()).Inc()
	}
}

// me answers who the token's operator is and what its role allows (the console hides the
// controls it cannot use).
func (a *Admin) me(c *gin.Context) {
	act := Actor(c)
	c.JSON(http.StatusOK, gin.H{"operator": act.Name, "role": act.Role.String(), "can": gin.H{
		"edit_drafts": act.Role.Allows(popup.RoleEditor),
		"publish":     act.Role.Allows(popup.RolePublisher),
		"admin":       act.Role.Allows(popup.RoleAdmin),
	}})
}

type operatorView struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// operators answers every operator's name and role, by name; never a token.
func operators(keys operator.Keys) gin.HandlerFunc {
	actors := keys.Actors()
	out := make([]operatorView, len(actors))
	for i, act := range actors {
		out[i] = operatorView{Name: act.Name, Role: act.Role.String()}
	}
	slices.SortFunc(out, func(x, y operatorView) int { return cmp.Compare(x.Name, y.Name) })
	return func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"operators": out}) }
}
