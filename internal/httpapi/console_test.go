package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The console's files are served without the token, with the security headers; the API next to
// them still needs the token.
func TestConsoleServedBeforeAuth(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := (&Admin{Token: "t", Log: log}).Router()
	require.NoError(t, err)
	do := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/admin/ui/", "text/html", `<script type="module" src="app.js">`},
		{"/admin/ui/app.js", "text/javascript", "import {"},
		{"/admin/ui/lib.js", "text/javascript", "sessionStorage"},
		{"/admin/ui/style.css", "text/css", ":root"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			w := do(http.MethodGet, tc.path)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Contains(t, w.Header().Get("Content-Type"), tc.contentType)
			assert.Contains(t, w.Body.String(), tc.contains)
			csp := w.Header().Get("Content-Security-Policy")
			for _, d := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"} {
				assert.Contains(t, csp, d)
			}
			assert.NotContains(t, csp, "unsafe-")
			assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
			assert.Equal(t, "no-referrer", w.Header().Get("Referrer-Policy"))
		})
	}
	w := do(http.MethodGet, "/admin/ui")
	assert.Equal(t, http.StatusMovedPermanently, w.Code)
	assert.Equal(t, "/admin/ui/", w.Header().Get("Location"))
	assert.Equal(t, http.StatusNotFound, do(http.MethodGet, "/admin/ui/nope.js").Code)
	assert.Equal(t, http.StatusMethodNotAllowed, do(http.MethodPost, "/admin/ui/").Code)
	// the API beside it is not opened up
	assert.Equal(t, http.StatusUnauthorized, do(http.MethodGet, "/admin/v1/popups").Code)
	assert.Equal(t, http.StatusUnauthorized, do(http.MethodGet, "/admin/uix").Code)
	// no file of the page loads anything from another origin
	for _, f := range []string{"/admin/ui/", "/admin/ui/app.js", "/admin/ui/lib.js", "/admin/ui/style.css"} {
		body := do(http.MethodGet, f).Body.String()
		for _, bad := range []string{"http://", "https://", "//cdn", "@import"} {
			for _, line := range strings.Split(body, "\n") {
				if strings.Contains(line, bad) && !strings.Contains(line, "www.w3.org/2000/svg") && !strings.Contains(line, "'https://…'") && !strings.Contains(line, "^https:") && !strings.Contains(line, "https images") {
					t.Errorf("%s refers to another origin: %s", f, strings.TrimSpace(line))
				}
			}
		}
	}
}
