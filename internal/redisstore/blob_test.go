package redisstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
)

// TestConfigBlobCarriesEveryField: a popup with every field set reads back from the config blob
// exactly as it was written.
func TestConfigBlobCarriesEveryField(t *testing.T) {
	t.Parallel()
	want := popuptest.Full()
	popuptest.RequireNoZeroField(t, toBlob(&want))
	blob, err := encodeConfig([]popup.Popup{want})
	require.NoError(t, err)
	got, err := decodeConfig(blob)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, want, got[0])
}
