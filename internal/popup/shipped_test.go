package popup_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
)

// A write may change the content a concluded experiment shipped only by ending the experiment
// (docs/CONTRACT.md §10, issue 41): the popup never says one variant shipped while serving another.
func TestKeepShipped(t *testing.T) {
	t.Parallel()
	shipped := func(status popup.ExperimentStatus) *popup.Popup {
		e := popuptest.FullExperiment()
		e.Status = status
		p := popup.Popup{Name: "p", Creative: e.Variants[1].Creative, Experiment: e}
		return &p
	}
	reworded := func(p *popup.Popup) popup.Popup {
		next := *p
		next.Title = "reworded"
		return next
	}
	same := func(p *popup.Popup) popup.Popup { return *p }
	removed := func(p *popup.Popup) popup.Popup { next := reworded(p); next.Experiment = nil; return next }
	tests := []struct {
		name      string
		stored    *popup.Popup
		next      func(*popup.Popup) popup.Popup
		end       bool
		wantErr   error
		wantEnded bool
		wantExp   bool // the write still carries an experiment
	}{
		{"a concluded experiment's content changed: refused", shipped(popup.ExperimentConcluded), reworded, false, popup.ErrExperimentShipped, false, true},
		{"changed with end_experiment: the experiment ends", shipped(popup.ExperimentConcluded), reworded, true, nil, true, false},
		{"changed with the experiment removed by the write itself", shipped(popup.ExperimentConcluded), removed, false, nil, false, false},
		{"the shipped content kept", shipped(popup.ExperimentConcluded), same, false, nil, false, true},
		{"the shipped content kept, end_experiment ignored", shipped(popup.ExperimentConcluded), same, true, nil, false, true},
		{"a stopped experiment's popup content is free", shipped(popup.ExperimentStopped), reworded, false, nil, false, true},
		{"a new popup", nil, func(*popup.Popup) popup.Popup { return reworded(shipped(popup.ExperimentConcluded)) }, false, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := tt.next(tt.stored)
			ended, err := popup.KeepShipped(&next, tt.stored, tt.end)
			assert.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, tt.wantEnded, ended)
			assert.Equal(t, tt.wantExp, next.Experiment != nil)
		})
	}
}
