package redisstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
)

// TestConfigBlobCarriesEveryField: a popup with every field set, its experiment's too, reads back
// from the config blob exactly as it was written.
func TestConfigBlobCarriesEveryField(t *testing.T) {
	t.Parallel()
	want := popuptest.Full()
	want.Experiment = fullExperiment()
	popuptest.RequireNoZeroField(t, toBlob(&want))
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

// fullExperiment is an experiment with every field, and every field of its parts, set.
func fullExperiment() *popup.Experiment {
	end := time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC)
	started := time.Date(2026, 11, 25, 8, 0, 0, 500_000_000, time.UTC)
	return &popup.Experiment{
		Status: popup.ExperimentRunning, CoveragePercent: 80,
		Variants: []popup.Variant{
			{Key: "a", Weight: 40, Creative: popup.Creative{Title: "A", Content: "a content", ImageURL: "https://cdn.example.com/a.png",
				LinkURL: "app://a", Buttons: []popup.Button{{Text: "Go", LinkURL: "app://a/go"}}, Ext: json.RawMessage(`{"k":"a"}`)}},
			{Key: "b", Weight: 40, Creative: popup.Creative{Title: "B", Content: "b content", ImageURL: "https://cdn.example.com/b.png",
				LinkURL: "app://b", Buttons: []popup.Button{{Text: "Go", LinkURL: "app://b/go"}}, Ext: json.RawMessage(`{"k":"b"}`)}},
		},
		Control:      &popup.Control{Weight: 20, Mode: popup.ControlFallThrough},
		PlannedEndAt: &end, Phase: 2, Salt: "3f9a0c2b7d1e4a65", PhaseStartedAt: &started, ConcludedVariant: "b",
	}
}
