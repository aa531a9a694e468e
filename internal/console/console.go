// Package console is the operator console: a static web page (plain ES modules and CSS, no
// build step) embedded in the binary and served on the admin listener under /admin/ui/. The
// files hold no secret, so they are served without the bearer token; every API call the page
// makes carries the token the operator signs in with.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Prefix is where the console is mounted.
const Prefix = "/admin/ui/"

//go:embed static
var static embed.FS

// CSP keeps every script, style, font and API call on the page's own origin. Images may also come
// from any https host: the live preview shows the popup's image_url, which lives on the CDN of
// the app's content, as the app would show it. Nothing else leaves the origin.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Handler serves the console's files under Prefix (and redirects the bare "/admin/ui" there).
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		if !strings.HasPrefix(r.URL.Path, Prefix) {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		files.ServeHTTP(w, r)
	})
}
