package report

import "popupsvc/internal/popup"

// HoldoutPhase is a phase of the global holdout as the setting's history keeps it
// (popup_holdout_phase): who started it and who ended it ("" while it runs). The holdout results
// list the phases; the domain needs only the phase itself (popup.Holdout).
type HoldoutPhase struct {
	popup.Holdout
	StartedBy, EndedBy string
}
