package httpapi

import (
	"errors"
	"log/slog"
	"net/http/pprof"
	"slices"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
)

// Admin serves the admin listener: the shell the admin features (internal/admin, one package a
// feature) hang their routes on. It owns what every route shares: the auth of the operators'
// bearer tokens (operator.Keys), the role guards and the log and count of refusals, the
// operators' own routes (/me, /operators), metrics and pprof. Every route needs the bearer token
// of an operator, and the operator's role must allow what the request does (docs/CONTRACT.md §9).
type Admin struct {
	// Operators hold the admin tokens (POPUP_ADMIN_TOKENS, POPUP_ADMIN_TOKENS_FILE); Token, when
	// set, is one more, of the operator "admin" with role admin (POPUP_ADMIN_TOKEN).
	Operators []operator.Operator
	Token     string
	// Registerer takes the admin API's own series (popup_admin_forbidden_total); nil: unregistered.
	Registerer prometheus.Registerer
	Log        *slog.Logger
	Gatherer   prometheus.Gatherer
	// Slices are the admin features (internal/admin): each registers its own routes on
	// /admin/v1, behind auth.
	Slices []Slice
}

// ErrNoToken is returned when the admin API would start without a token.
var ErrNoToken = errors.New("no admin token (POPUP_ADMIN_TOKEN, POPUP_ADMIN_TOKENS or POPUP_ADMIN_TOKENS_FILE): the admin API refuses to start without one")

// Router builds the admin router.
func (a *Admin) Router() (*gin.Engine, error) {
	ops := a.Operators
	if a.Token != "" {
		ops = append(slices.Clip(ops), operator.Operator{Name: operator.AdminName, Role: popup.RoleAdmin, Token: a.Token})
	}
	if len(ops) == 0 {
		return nil, ErrNoToken
	}
	keys, err := operator.NewKeys(ops)
	if err != nil {
		return nil, err
	}
	refused, err := newRefusals(a.Registerer)
	if err != nil {
		return nil, err
	}
	admin := func(what string) gin.HandlerFunc { return a.requireRole(popup.RoleAdmin, what) }
	r := newEngine(a.Log)
	r.Use(serveConsole()) // before auth: the console's static files (console.go)
	r.Use(func(c *gin.Context) { a.auth(c, keys) })
	r.Use(a.logRefusal(refused))
	v1 := r.Group("/admin/v1")
	v1.GET("/me", a.me)
	v1.GET("/operators", admin("listing operators"), operators(keys))
	for _, s := range a.Slices {
		s.Register(v1)
	}
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

// auth finds the operator of the bearer token (operator.Keys.Match: constant time, every token
// compared) and leaves it, with its role, for the handlers.
func (a *Admin) auth(c *gin.Context, keys operator.Keys) {
	const prefix = "Bearer "
	h := c.GetHeader("Authorization")
	var (
		act popup.Actor
		ok  bool
	)
	if len(h) > len(prefix) && h[:len(prefix)] == prefix {
		act, ok = keys.Match(h[len(prefix):])
	}
	if !ok {
		c.Header("WWW-Authenticate", `Bearer realm="popup-admin"`)
		writeError(c, a.Log, errAuth)
		return
	}
	c.Set(actorCtxKey, act)
}
