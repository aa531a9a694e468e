package popup_test

import (
	"strconv"
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

// Moves counts the users whose arm a change of the arms under the same salt changes, as the
// assignment decides it: nobody for the same arms, and for shifted weights exactly the users
// whose arm bucket falls in the ranges that changed hands.
func TestMoves(t *testing.T) {
	t.Parallel()
	const salt = "3f9a0c2b7d1e4a65"
	arms := func(wa, wb int) *popup.Experiment {
		return &popup.Experiment{CoveragePercent: 100, Variants: []popup.Variant{{Key: "a", Weight: wa}, {Key: "b", Weight: wb}}}
	}
	before := arms(50, 50)
	before.Status, before.Salt = popup.ExperimentRunning, salt
	assign := popup.NewAssigner(before)
	users := make(map[string]string, 2000)
	for i := range 2000 {
		uid := "u" + strconv.Itoa(i)
		users[uid] = before.ArmKey(assign.Assign(uid))
	}
	tests := []struct {
		name string
		next *popup.Experiment
		// moved is whether a user of arm bucket b in arm moves
		moved func(bucket int, arm string) bool
	}{
		{"the same arms move nobody", arms(50, 50), func(int, string) bool { return false }},
		{"20/80: the a users of buckets 2000-4999 move to b", arms(20, 80), func(b int, arm string) bool { return arm == "a" && b >= 2000 }},
		{"80/20: the b users of buckets 5000-7999 move to a", arms(80, 20), func(b int, arm string) bool { return arm == "b" && b < 8000 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := popup.NewMoves(tt.next, salt)
			var want int64
			for uid, arm := range users {
				m.Add(uid, arm)
				if tt.moved(popup.ArmBucket(salt, uid), arm) {
					want++
				}
			}
			assert.Equal(t, int64(len(users)), m.Users)
			assert.Equal(t, want, m.Moved)
		})
	}
}
