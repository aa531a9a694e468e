package mysqlstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup/popuptest"
)

// TestRevisionDocCarriesEveryField: a popup with every field set reads back from the JSON that
// popup_revision and popup_audit store exactly as it was written.
func TestRevisionDocCarriesEveryField(t *testing.T) {
	t.Parallel()
	want := popuptest.Full()
	raw, err := encodeDoc(want)
	require.NoError(t, err)
	got, err := decodeDoc(raw)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
