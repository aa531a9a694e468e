package popuptest

import (
	"encoding/json"
	"time"

	"popupsvc/internal/popup"
)

// FullExperiment is a valid experiment with every field, and every field of its parts, set to a
// non-zero value that survives every store: two variants and a control, in phase 2. (Its status
// and concluded variant do not go together: each is there to be carried, not to make sense.)
func FullExperiment() *popup.Experiment {
	end := time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC)
	started := time.Date(2026, 11, 25, 8, 0, 0, 500_000_000, time.UTC)
	return &popup.Experiment{
		Status: popup.ExperimentRunning, CoveragePercent: 80,
		Variants: []popup.Variant{
			{Key: "a", Weight: 40, Creative: popup.Creative{Title: "A", Content: "a content", ImageURL: "https://cdn.example.com/a.png", ImageAlt: "A",
				LinkURL: "app://a", Buttons: []popup.Button{{Text: "Go", LinkURL: "app://a/go"}}, Ext: json.RawMessage(`{"k":"a"}`),
				Translations: []popup.Translation{FullTranslation("de", "a")}}},
			{Key: "b", Weight: 40, Creative: popup.Creative{Title: "B", Content: "b content", ImageURL: "https://cdn.example.com/b.png", ImageAlt: "B",
				LinkURL: "app://b", Buttons: []popup.Button{{Text: "Go", LinkURL: "app://b/go"}}, Ext: json.RawMessage(`{"k":"b"}`),
				Translations: []popup.Translation{FullTranslation("de", "b")}}},
		},
		Control:      &popup.Control{Weight: 20, Mode: popup.ControlFallThrough},
		PlannedEndAt: &end, PrimaryGoal: "purchase", Phase: 2, Salt: "3f9a0c2b7d1e4a65", PhaseStartedAt: &started, ConcludedVariant: "b",
	}
}
