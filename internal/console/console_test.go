package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxLines is the most lines a script of the console may have: past it, a file is doing the work
// of several modules (a page, a section of the editor, an API resource) and is split.
const maxLines = 600

// scripts reads every JavaScript module the binary embeds: path under static → text.
func scripts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		b, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, "static/")] = string(b)
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, out, "app.js")
	return out
}

func TestScriptsAtMost600Lines(t *testing.T) {
	t.Parallel()
	for name, text := range scripts(t) {
		n := strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
		assert.LessOrEqual(t, n, maxLines, "%s has %d lines: split it into modules (docs/CONSOLE.md)", name, n)
	}
}

var (
	importRe = regexp.MustCompile(`(?s)import\s*\{([^}]*)\}\s*from\s*'([^']+)'`)
	exportRe = regexp.MustCompile(`(?m)^export (?:async )?(?:function|const|let) ([A-Za-z_$][\w$]*)`)
)

// Every module the console imports is embedded, and exports every name imported from it: a
// module moved or a name renamed fails here, not in an operator's browser.
func TestImportsResolve(t *testing.T) {
	t.Parallel()
	all := scripts(t)
	exports := map[string]map[string]bool{}
	for name, text := range all {
		exports[name] = map[string]bool{}
		for _, m := range exportRe.FindAllStringSubmatch(text, -1) {
			exports[name][m[1]] = true
		}
	}
	imports := 0
	for name, text := range all {
		for _, m := range importRe.FindAllStringSubmatch(text, -1) {
			imports++
			require.True(t, strings.HasPrefix(m[2], "./") || strings.HasPrefix(m[2], "../"), "%s imports %s: only relative, same-origin modules", name, m[2])
			target := path.Join(path.Dir(name), m[2])
			if !assert.Contains(t, exports, target, "%s imports %s, which is not embedded", name, m[2]) {
				continue
			}
			for _, n := range strings.Split(m[1], ",") {
				n = strings.TrimSpace(strings.SplitN(strings.TrimSpace(n), " as ", 2)[0])
				if n != "" {
					assert.True(t, exports[target][n], "%s imports %s from %s, which does not export it", name, n, target)
				}
			}
		}
	}
	assert.Greater(t, imports, 20)
}

// adminURL is a string literal that starts with an admin API path.
var adminURL = regexp.MustCompile("['\"`]/admin/v1")

// Each admin API address is written in the wrapper of its resource (static/api/), once; pages
// call the wrappers.
func TestAdminURLsOnlyInAPIModules(t *testing.T) {
	t.Parallel()
	inAPI := 0
	for name, text := range scripts(t) {
		if strings.HasPrefix(name, "api/") {
			inAPI += len(adminURL.FindAllString(text, -1))
			continue
		}
		for i, line := range strings.Split(text, "\n") {
			assert.False(t, adminURL.MatchString(line), "%s:%d calls the admin API by address: add or use a function of api/", name, i+1)
		}
	}
	assert.Greater(t, inAPI, 10)
}

// The modules in subfolders are served as the shell is: JavaScript, under the CSP, which allows
// same-origin scripts only.
func TestServesModulesOfSubfolders(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"app.js", "api/popups.js", "pages/popup/edit.js"} {
		w := httptest.NewRecorder()
		Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, Prefix+p, nil))
		require.Equal(t, http.StatusOK, w.Code, p)
		assert.Contains(t, w.Header().Get("Content-Type"), "text/javascript", p)
		assert.Contains(t, w.Header().Get("Content-Security-Policy"), "script-src 'self'", p)
		assert.Contains(t, w.Body.String(), "import {", p)
	}
}
