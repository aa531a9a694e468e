package popup_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// withExperiment gives a popup e, with its server-managed fields as a stored popup has them.
func withExperiment(e popup.Experiment) func(*popup.Input) {
	return func(in *popup.Input) {
		e.Phase = 1
		if e.Salt == "" {
			e.Salt = "3f9a0c2b7d1e4a65"
		}
		in.Experiment = &e
	}
}

func twoVariantsAndControl(status popup.ExperimentStatus, coverage int) popup.Experiment {
	return popup.Experiment{Status: status, CoveragePercent: coverage,
		Variants: []popup.Variant{{Key: "a", Weight: 40, Creative: popup.Creative{Title: "A"}}, {Key: "b", Weight: 40, Creative: popup.Creative{Title: "B"}}},
		Control:  &popup.Control{Weight: 20, Mode: popup.ControlNone}}
}

func TestArmIsTheAssignmentOfARunningExperiment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mod  func(*popup.Input)
		want func(uid string) int
	}{
		{name: "no experiment", mod: noChange, want: func(string) int { return -1 }},
		{name: "draft", mod: withExperiment(twoVariantsAndControl(popup.ExperimentDraft, 100)), want: func(string) int { return -1 }},
		{name: "stopped", mod: withExperiment(twoVariantsAndControl(popup.ExperimentStopped, 100)), want: func(string) int { return -1 }},
		{name: "running, full coverage", mod: withExperiment(twoVariantsAndControl(popup.ExperimentRunning, 100)), want: func(uid string) int {
			e := twoVariantsAndControl(popup.ExperimentRunning, 100)
			e.Salt = "3f9a0c2b7d1e4a65"
			a := popup.NewAssigner(&e)
			return a.Assign(uid)
		}},
		{name: "running, no coverage", mod: withExperiment(twoVariantsAndControl(popup.ExperimentRunning, 0)), want: func(string) int { return -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, 1, tt.mod)
			for i := range 200 {
				uid := "user-" + strconv.Itoa(i)
				require.Equal(t, tt.want(uid), c.Arm(uid), uid)
			}
		})
	}
}

func TestArmKnownAnswer(t *testing.T) {
	t.Parallel()
	// salt 3f9a0c2b7d1e4a65, uid user-1: coverage bucket 9813, arm bucket 7857 (CONTRACT §10):
	// in a 100% experiment with arms 40/40/20 that is arm 1 (b: [4000, 8000)); at 98% coverage, out.
	assert.Equal(t, 1, compiled(t, 1, withExperiment(twoVariantsAndControl(popup.ExperimentRunning, 100))).Arm("user-1"))
	assert.Equal(t, -1, compiled(t, 1, withExperiment(twoVariantsAndControl(popup.ExperimentRunning, 98))).Arm("user-1"))
}

func TestArmDoesNotAllocate(t *testing.T) {
	with := compiled(t, 1, withExperiment(twoVariantsAndControl(popup.ExperimentRunning, 100)))
	without := compiled(t, 2, noChange)
	assert.Zero(t, testing.AllocsPerRun(100, func() { with.Arm("user-1"); without.Arm("user-1") }))
}
