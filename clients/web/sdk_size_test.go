package web

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxGzipped is the SDK's budget (issue 40): what a page downloads, gzip-compressed.
const maxGzipped = 5 << 10

func TestSDKIsAtMost5KBGzipped(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("popup-client.js")
	require.NoError(t, err)
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(src)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	assert.LessOrEqual(t, buf.Len(), maxGzipped, "popup-client.js is %d bytes gzipped", buf.Len())
}

// TestPackageShipsTheModuleAndItsTypes checks package.json: an ES module whose entry points and
// files exist, with its types.
func TestPackageShipsTheModuleAndItsTypes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("package.json")
	require.NoError(t, err)
	var pkg struct {
		Name    string                       `json:"name"`
		Type    string                       `json:"type"`
		Module  string                       `json:"module"`
		Types   string                       `json:"types"`
		Exports map[string]map[string]string `json:"exports"`
		Files   []string                     `json:"files"`
	}
	require.NoError(t, json.Unmarshal(raw, &pkg))
	assert.NotEmpty(t, pkg.Name)
	assert.Equal(t, "module", pkg.Type, "ESM")
	assert.Equal(t, "./popup-client.js", pkg.Exports["."]["import"])
	assert.Equal(t, "./popup-client.d.ts", pkg.Exports["."]["types"])
	for _, f := range append(pkg.Files, pkg.Module, pkg.Types) {
		_, err := os.Stat(f)
		assert.NoError(t, err, "package.json names %s", f)
	}
}
