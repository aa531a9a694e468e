package httpapi

import (
	"strings"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/console"
)

// serveConsole answers every request under /admin/ui with the operator console's static files
// (internal/console) and lets everything else through. It runs before the auth middleware: the
// files hold no secret, and the page sends the bearer token with every API call it makes. It is
// a middleware, not a route, so the router's route table stays the API that api/openapi.yaml
// documents (a request that matches no route still passes the engine's middlewares).
func serveConsole() gin.HandlerFunc {
	h := console.Handler()
	return func(c *gin.Context) {
		p := c.Request.URL.Path
		if p != "/admin/ui" && !strings.HasPrefix(p, console.Prefix) {
			return
		}
		h.ServeHTTP(c.Writer, c.Request)
		c.Abort()
	}
}
