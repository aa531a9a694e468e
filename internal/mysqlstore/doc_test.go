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
	want.Experiment = popuptest.FullExperiment()
	raw, err := encodeDoc(want)
	require.NoError(t, err)
	got, err := decodeDoc(raw)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	want.Experiment = nil
	raw, err = encodeDoc(want)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"experiment"`, "no experiment: no key, as in revisions from before migration 00009")
	got, err = decodeDoc(raw)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
