package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/cors"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

const (
	pageOrigin = "https://m.example.com"
	getTarget  = "/api/v1/popup?uid=u1&platform=web&app_version=8.10.0"
	postTarget = "/api/v1/popups/7/actions"
)

// corsRouter is the public router with CORS allowing pageOrigin and https://*.shop.example.
func corsRouter(t *testing.T, keys []string) http.Handler {
	t.Helper()
	p, _ := testPublic(t, keys)
	origins, err := cors.Parse([]string{pageOrigin, "https://*.shop.example"})
	require.NoError(t, err)
	p.CORS = origins
	return p.Router()
}

// browser sends what a browser would: the method and target, with headers.
func browser(h http.Handler, method, target, body string, headers map[string]string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// corsHeaders is every Access-Control-* header of an answer.
func corsHeaders(rec *httptest.ResponseRecorder) http.Header {
	out := http.Header{}
	for k, v := range rec.Header() {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = v
		}
	}
	return out
}

func TestCORSAllowedOriginReadsTheAnswers(t *testing.T) {
	t.Parallel()
	h := corsRouter(t, nil)
	tests := []struct {
		name, method, target, body, origin string
		wantStatus                         int
	}{
		{"decision", http.MethodGet, getTarget, "", pageOrigin, http.StatusOK},
		{"decision from a wildcard's subdomain", http.MethodGet, getTarget, "", "https://a.b.shop.example", http.StatusOK},
		{"action", http.MethodPost, postTarget, `{"uid":"u1","action":"close","event_id":"e1"}`, pageOrigin, http.StatusAccepted},
		{"a bad request's error is readable too", http.MethodGet, "/api/v1/popup?uid=u1", "", pageOrigin, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := browser(h, tt.method, tt.target, tt.body, map[string]string{"Origin": tt.origin, "Content-Type": "application/json"})
			assert.Equal(t, tt.wantStatus, rec.Code, rec.Body.String())
			assert.Equal(t, http.Header{"Access-Control-Allow-Origin": {tt.origin}}, corsHeaders(rec),
				"an answer without Retry-After or X-Popup-Degraded exposes nothing more")
			assert.Equal(t, "Origin", rec.Header().Get("Vary"))
		})
	}
}

// downUsers is a user store whose Redis is away: every call fails at once.
type downUsers struct{}

func (downUsers) Get(context.Context, string, time.Time) (popup.StoredState, error) {
	return popup.StoredState{}, errors.New("redis: connection refused")
}

func (downUsers) Record(context.Context, string, string, *popup.UserState, []event.Event, bool) (popup.Outcome, error) {
	return 0, errors.New("redis: connection refused")
}

// TestCORSExposesTheHeadersAPageReads: a degraded decision's X-Popup-Degraded and a refused
// action's Retry-After are what the web SDK reads, so an allowed page's answers that carry them
// expose both; another origin's answers get no CORS header at all.
func TestCORSExposesTheHeadersAPageReads(t *testing.T) {
	t.Parallel()
	p, _ := testPublic(t, nil)
	p.Decider.Users = downUsers{}
	origins, err := cors.Parse([]string{pageOrigin})
	require.NoError(t, err)
	p.CORS = origins
	h := p.Router()
	exposed := http.Header{
		"Access-Control-Allow-Origin":   {pageOrigin},
		"Access-Control-Expose-Headers": {"Retry-After, X-Popup-Degraded"},
	}

	rec := browser(h, http.MethodGet, getTarget, "", map[string]string{"Origin": pageOrigin})
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("X-Popup-Degraded"))
	assert.Equal(t, exposed, corsHeaders(rec), "degraded decision")

	action := `{"uid":"u1","action":"close","event_id":"e1"}`
	rec = browser(h, http.MethodPost, postTarget, action, map[string]string{"Origin": pageOrigin, "Content-Type": "application/json"})
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Equal(t, exposed, corsHeaders(rec), "refused action")

	rec = browser(h, http.MethodGet, getTarget, "", map[string]string{"Origin": "https://evil.example"})
	assert.Equal(t, "1", rec.Header().Get("X-Popup-Degraded"))
	assert.Empty(t, corsHeaders(rec), "another origin")
}

func TestCORSOtherOriginsGetNoCORSHeaders(t *testing.T) {
	t.Parallel()
	h := corsRouter(t, nil)
	for _, origin := range []string{"https://evil.example", "https://shop.example", "http://m.example.com", "null"} {
		rec := browser(h, http.MethodGet, getTarget, "", map[string]string{"Origin": origin})
		assert.Equal(t, http.StatusOK, rec.Code, origin) // the server answers; the browser keeps it from the page
		assert.Empty(t, corsHeaders(rec), origin)
		assert.Equal(t, "Origin", rec.Header().Get("Vary"), "a shared cache must not hand this answer to an allowed page")

		rec = browser(h, http.MethodOptions, postTarget, "", map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST"})
		assert.Equal(t, http.StatusForbidden, rec.Code, origin)
		assert.JSONEq(t, `{"error":{"code":"cors_origin_not_allowed","message":"this Origin may not call the API from a browser (POPUP_CORS_ORIGINS)"}}`, rec.Body.String())
		assert.Empty(t, corsHeaders(rec), origin)
	}
}

func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		keys          []string
		target        string
		method        string
		wantStatus    int
		wantHeaders   http.Header
		wantErrorCode string
	}{
		{"action", nil, postTarget, "POST", http.StatusNoContent, http.Header{
			"Access-Control-Allow-Origin":  {pageOrigin},
			"Access-Control-Allow-Methods": {"POST"},
			"Access-Control-Allow-Headers": {"Content-Type, X-Popup-Uid-Sig"}, // before keys are set too: docs/SECURITY.md's order
			"Access-Control-Max-Age":       {"3600"},
		}, ""},
		{"decision", nil, getTarget, "GET", http.StatusNoContent, http.Header{
			"Access-Control-Allow-Origin":  {pageOrigin},
			"Access-Control-Allow-Methods": {"GET"},
			"Access-Control-Allow-Headers": {"Content-Type, X-Popup-Uid-Sig"}, // before keys are set too: docs/SECURITY.md's order
			"Access-Control-Max-Age":       {"3600"},
		}, ""},
		{"uid signatures on: the header is allowed", []string{gatewayKey}, postTarget, "POST", http.StatusNoContent, http.Header{
			"Access-Control-Allow-Origin":  {pageOrigin},
			"Access-Control-Allow-Methods": {"POST"},
			"Access-Control-Allow-Headers": {"Content-Type, X-Popup-Uid-Sig"},
			"Access-Control-Max-Age":       {"3600"},
		}, ""},
		{"a method the route does not take", nil, postTarget, "DELETE", http.StatusForbidden, http.Header{}, "cors_method_not_allowed"},
		{"not an app route: its own 404", nil, "/metrics", "GET", http.StatusNotFound, http.Header{}, "not_found"},
		{"health is not for pages: its 405", nil, "/healthz", "GET", http.StatusMethodNotAllowed, http.Header{}, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := corsRouter(t, tt.keys)
			rec := browser(h, http.MethodOptions, tt.target, "", map[string]string{"Origin": pageOrigin,
				"Access-Control-Request-Method": tt.method, "Access-Control-Request-Headers": "content-type"})
			assert.Equal(t, tt.wantStatus, rec.Code, rec.Body.String())
			assert.Equal(t, tt.wantHeaders, corsHeaders(rec))
			if tt.wantErrorCode != "" {
				assert.Contains(t, rec.Body.String(), `"code":"`+tt.wantErrorCode+`"`)
			} else {
				assert.Empty(t, rec.Body.String())
			}
		})
	}
}

func TestCORSOffSendsNothing(t *testing.T) {
	t.Parallel()
	h, _ := publicRouter(t, nil)
	rec := browser(h, http.MethodGet, getTarget, "", map[string]string{"Origin": pageOrigin})
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, corsHeaders(rec))
	assert.Empty(t, rec.Header().Values("Vary"))
	rec = browser(h, http.MethodOptions, postTarget, "", map[string]string{"Origin": pageOrigin, "Access-Control-Request-Method": "POST"})
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code, "no preflight is answered: the browser refuses the call")
	assert.Empty(t, corsHeaders(rec))
}

func TestCORSNeverOnTheAdminListener(t *testing.T) {
	t.Parallel()
	adm, err := (&Admin{Token: "t", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Router()
	require.NoError(t, err)
	for _, method := range []string{http.MethodGet, http.MethodOptions} {
		rec := browser(adm, method, "/admin/v1/popups", "", map[string]string{"Origin": pageOrigin, "Authorization": "Bearer t",
			"Access-Control-Request-Method": "GET"})
		assert.Empty(t, corsHeaders(rec), method)
	}
}

// BenchmarkCORS is the cost of CORS on the homepage GET (docs/PERFORMANCE.md, "CORS"): the
// steady-state answer through the real router with CORS off (no middleware mounted), and on for a
// request without Origin (an app), an allowed exact origin, a wildcard's subdomain and a refused
// origin. The middleware sub-benchmarks run the middleware alone on one request, and report its
// CPU time per request beside the wall-clock ns/op: on a shared machine the wall clock counts the
// time other processes held the core, the CPU time does not.
func BenchmarkCORS(b *testing.B) {
	origins, err := cors.Parse([]string{"https://www.example.org", "https://app.example.net", pageOrigin, "https://*.shop.example"})
	require.NoError(b, err)
	cases := []struct {
		name   string
		on     bool
		origin string
	}{
		{"off", false, pageOrigin},
		{"on, no Origin", true, ""},
		{"on, exact origin", true, pageOrigin},
		{"on, wildcard origin", true, "https://a.shop.example"},
		{"on, refused origin", true, "https://evil.example"},
	}
	for _, bc := range cases {
		b.Run("GET/"+bc.name, func(b *testing.B) {
			var o *cors.Origins
			if bc.on {
				o = &origins
			}
			h, req := steadyStateRouter(b, 1000, nil, o)
			if bc.origin != "" {
				req.Header.Set("Origin", bc.origin)
			}
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(&w, req)
			}
		})
	}
	for _, bc := range cases[1:] {
		b.Run("middleware/"+bc.name, func(b *testing.B) {
			policy := newCORSPolicy(origins)
			gin.SetMode(gin.ReleaseMode) // as newEngine: no debug warnings in the output
			c, _ := gin.CreateTestContext(&discardWriter{h: http.Header{}})
			c.Request = httptest.NewRequest(http.MethodGet, getTarget, nil)
			if bc.origin != "" {
				c.Request.Header.Set("Origin", bc.origin)
			}
			b.ReportAllocs()
			began := testenv.ProcessCPU(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				policy.handle(c)
			}
			b.StopTimer()
			b.ReportMetric(float64(testenv.ProcessCPU(b)-began)/float64(b.N), "cpu-ns/op")
		})
	}
}
