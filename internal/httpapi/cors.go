package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/cors"
	"popupsvc/internal/uidauth"
)

// corsMaxAge is how long a browser may keep a preflight's answer, in seconds (Chromium caps it
// at two hours): one preflight an hour per page origin and route, not one per action.
const corsMaxAge = "3600"

// The CORS answer headers, as shared one-value slices: assigned to an answer's header map without
// an allocation (capacity one: an append elsewhere copies rather than writes into them).
var (
	varyOrigin     = []string{"Origin"}
	varyPreflight  = []string{"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"}
	exposedHeaders = []string{"Retry-After, X-Popup-Degraded"}
	maxAgeHeader   = []string{corsMaxAge}
	getMethods     = []string{"GET"}
	postMethods    = []string{"POST"}
)

// corsPolicy answers browsers for the public listener's two app routes (docs/CONTRACT.md §3):
// an allowed Origin gets Access-Control-Allow-Origin (its own value, never "*") on the GET and the
// action POST, and a 204 to its preflight; any other Origin gets no CORS header and a 403 to its
// preflight. It is mounted only when POPUP_CORS_ORIGINS is set: off, it costs nothing.
type corsPolicy struct {
	origins cors.Origins
	// allowHeaders is the preflight's Access-Control-Allow-Headers: Content-Type (the action's
	// JSON body) and the uid signature header, whether or not signatures are required yet: a page
	// sets the signature before the service has POPUP_UID_HMAC_KEYS (docs/SECURITY.md's order),
	// and a preflight refusing it would block every call of that page.
	allowHeaders []string
}

func newCORSPolicy(origins cors.Origins) *corsPolicy {
	return &corsPolicy{origins: origins, allowHeaders: []string{"Content-Type, " + uidauth.Header}}
}

var (
	errCORSOrigin = &Error{status: http.StatusForbidden, code: "cors_origin_not_allowed",
		message: "this Origin may not call the API from a browser (POPUP_CORS_ORIGINS)"}
	errCORSMethod = &Error{status: http.StatusForbidden, code: "cors_method_not_allowed",
		message: "Access-Control-Request-Method is not a method of this route"}
)

// handle is the middleware. A request without an Origin header (an app, a server) costs one map
// lookup.
func (p *corsPolicy) handle(c *gin.Context) {
	origin := c.Request.Header["Origin"]
	if len(origin) == 0 {
		return
	}
	allowed := len(origin) == 1 && p.origins.Allowed(origin[0])
	if c.Request.Method == http.MethodOptions && len(c.Request.Header["Access-Control-Request-Method"]) > 0 {
		p.preflight(c, origin, allowed)
		return
	}
	h := c.Writer.Header()
	h["Vary"] = varyOrigin
	if allowed {
		h["Access-Control-Allow-Origin"] = origin
	}
}

// setExposedHeader sets one of the answer headers a page's script reads (Retry-After,
// X-Popup-Degraded) and, on an answer to an allowed Origin, exposes both to the page. Only the
// answers that carry one pay for the Access-Control-Expose-Headers write, not every decision
// (docs/PERFORMANCE.md, CORS).
func setExposedHeader(c *gin.Context, key, value string) {
	h := c.Writer.Header()
	h.Set(key, value)
	if h["Access-Control-Allow-Origin"] != nil {
		h["Access-Control-Expose-Headers"] = exposedHeaders
	}
}

// preflight answers a browser's OPTIONS before a cross-origin request: 204 with what the route
// takes, or 403 naming why not. Paths that are not an app route fall through to their 404.
func (p *corsPolicy) preflight(c *gin.Context, origin []string, allowed bool) {
	methods := corsRouteMethods(c.Request.URL.Path)
	if methods == nil {
		return
	}
	h := c.Writer.Header()
	h["Vary"] = varyPreflight
	switch {
	case !allowed:
		writeError(c, nil, errCORSOrigin)
	case c.Request.Header.Get("Access-Control-Request-Method") != methods[0]:
		writeError(c, nil, errCORSMethod)
	default:
		h["Access-Control-Allow-Origin"] = origin
		h["Access-Control-Allow-Methods"] = methods
		h["Access-Control-Allow-Headers"] = p.allowHeaders
		h["Access-Control-Max-Age"] = maxAgeHeader
		c.Status(http.StatusNoContent)
	}
	c.Abort()
}

// corsRouteMethods is the method a browser may use on path: GET on the decision, POST on its
// twin, on a popup's actions and on a conversion; nil for every other path (health, metrics, a
// backend's batch of conversions: not for pages).
func corsRouteMethods(path string) []string {
	switch path {
	case "/api/v1/popup":
		return getMethods
	case "/api/v1/conversions", "/api/v1/decisions":
		return postMethods
	}
	if id, ok := strings.CutPrefix(path, "/api/v1/popups/"); ok {
		if id, ok = strings.CutSuffix(id, "/actions"); ok && id != "" && !strings.Contains(id, "/") {
			return postMethods
		}
	}
	return nil
}
