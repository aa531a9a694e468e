package redisstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
	"popupsvc/internal/popupdoc"
)

// TestConfigBlobCarriesEveryField: a popup with every field set, its experiment's too, reads back
// from the config blob exactly as it was written.
func TestConfigBlobCarriesEveryField(t *testing.T) {
	t.Parallel()
	want := popuptest.Full() // with its experiment
	popuptest.RequireNoZeroField(t, popupdoc.EntryOf(&want))
	blob, err := encodeConfig([]popup.Popup{want})
	require.NoError(t, err)
	got, err := decodeConfig(blob)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, want, got[0])
}

// TestConfigBlobWithoutExperimentHasNoExperiment: a popup without an experiment writes no
// "experiment" key (an older build's blob has none either) and reads back with none.
func TestConfigBlobWithoutExperimentHasNoExperiment(t *testing.T) {
	t.Parallel()
	p := popuptest.Full()
	p.Experiment = nil
	blob, err := encodeConfig([]popup.Popup{p})
	require.NoError(t, err)
	assert.NotContains(t, string(blob), `"experiment"`)
	got, err := decodeConfig(blob)
	require.NoError(t, err)
	assert.Nil(t, got[0].Experiment)
}
