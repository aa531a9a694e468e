package web

import (
	"bytes"
	"compress/gzip"
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
