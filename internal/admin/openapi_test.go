package admin_test

import (
	"io"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"popupsvc/internal/admin"
	"popupsvc/internal/httpapi"
)

// TestOpenAPIListsTheRouterRoutes keeps api/openapi.yaml and the routers in step.
func TestOpenAPIListsTheRouterRoutes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../api/openapi.yaml")
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	var spec []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			spec = append(spec, strings.ToUpper(method)+" "+path)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pub := (&httpapi.Public{Log: log}).Router()
	adm, err := (&httpapi.Admin{Token: "t", Log: log, Slices: admin.New(&httpapi.Shared{Log: log}, admin.Deps{})}).Router()
	require.NoError(t, err)
	param := regexp.MustCompile(`:(\w+)`)
	var routes []string
	for _, r := range append(pub.Routes(), adm.Routes()...) {
		path := param.ReplaceAllString(r.Path, "{$1}")
		if strings.HasPrefix(path, "/debug/pprof/") && path != "/debug/pprof/" {
			continue // the pprof family is documented by its index
		}
		routes = append(routes, r.Method+" "+path)
	}
	sort.Strings(spec)
	sort.Strings(routes)
	assert.Equal(t, spec, routes)
}
