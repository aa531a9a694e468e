package results_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
)

var now = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// experiment has variants a (40) and b (40) and, unless mode is "", a control (20).
func experiment(mode popup.ControlMode) *popup.Experiment {
	e := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 2, Salt: "s2",
		Variants: []popup.Variant{{Key: "a", Weight: 40}, {Key: "b", Weight: 40}}}
	if mode != "" {
		e.Control = &popup.Control{Weight: 20, Mode: mode}
	} else {
		e.Variants[0].Weight, e.Variants[1].Weight = 50, 50
	}
	return e
}

// days has each arm's users over two days; clicked users as given.
func days(exposed map[string]int64, clicked map[string]int64) []results.ArmDay {
	var out []results.ArmDay
	for arm, n := range exposed {
		out = append(out,
			results.ArmDay{Day: "2026-11-30", Arm: arm, ExposedUsers: n / 2, Exposures: n, ClickedUsers: clicked[arm] / 2, Clicks: clicked[arm]},
			results.ArmDay{Day: "2026-11-29", Arm: arm, ExposedUsers: n - n/2, Exposures: n, ClickedUsers: clicked[arm] - clicked[arm]/2, Closes: 1})
	}
	return out
}

func TestComputeBaselineAndComparisons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		mode         popup.ControlMode
		exposed      map[string]int64
		clicked      map[string]int64
		wantBaseline string
		wantCompared []string // arms with a comparison
		wantNoRate   []string // arms without a click-through rate
		wantReason   stats.Reason
		wantWinner   string
	}{
		{name: "fall-through control is the baseline", mode: popup.ControlFallThrough,
			exposed: map[string]int64{"a": 8000, "b": 8000, "control": 4000}, clicked: map[string]int64{"a": 400, "b": 800, "control": 200},
			wantBaseline: "control", wantCompared: []string{"a", "b"}, wantReason: stats.ReasonSequential, wantWinner: "b"},
		{name: "a show-nothing control has no rate; the first variant is the baseline", mode: popup.ControlNone,
			exposed: map[string]int64{"a": 8000, "b": 8000, "control": 4000}, clicked: map[string]int64{"a": 400, "b": 800},
			wantBaseline: "a", wantCompared: []string{"b"}, wantNoRate: []string{"control"}, wantReason: stats.ReasonSequential, wantWinner: "b"},
		{name: "a show-nothing control counts in the ratio check", mode: popup.ControlNone,
			exposed: map[string]int64{"a": 8000, "b": 8000, "control": 2000}, clicked: map[string]int64{"a": 400, "b": 800},
			wantBaseline: "a", wantCompared: []string{"b"}, wantNoRate: []string{"control"}, wantReason: stats.ReasonSRM},
		{name: "no control: the first variant is the baseline",
			exposed: map[string]int64{"a": 100, "b": 100}, clicked: map[string]int64{"a": 5, "b": 6},
			wantBaseline: "a", wantCompared: []string{"b"}, wantReason: stats.ReasonMinSample},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := experiment(tt.mode)
			got, err := results.Compute(e, days(tt.exposed, tt.clicked), now)
			require.NoError(t, err)
			assert.Equal(t, tt.wantBaseline, got.Baseline)
			var compared, noRate []string
			for _, a := range got.Arms {
				if a.Comparison != nil {
					compared = append(compared, a.Key)
				}
				if a.Rate == nil {
					noRate = append(noRate, a.Key)
				}
				assert.Equal(t, tt.exposed[a.Key], a.ExposedUsers, "the days sum to the totals")
				assert.Equal(t, tt.clicked[a.Key], a.ClickedUsers)
			}
			assert.Equal(t, tt.wantCompared, compared)
			assert.Equal(t, tt.wantNoRate, noRate)
			assert.Equal(t, tt.wantReason, got.Reason)
			assert.Equal(t, tt.wantWinner, got.Winner)
			assert.Equal(t, len(e.Variants)+map[bool]int{true: 1}[e.Control != nil]-1, got.SampleRatio.DF, "the ratio check is over every arm")
		})
	}
}

func TestComputeEqualsTheStatsOfTheTotals(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlFallThrough)
	end := now.Add(-time.Hour)
	e.PlannedEndAt = &end
	in := append(days(map[string]int64{"a": 5000, "b": 5100, "control": 2400}, map[string]int64{"a": 250, "b": 300, "control": 110}),
		results.ArmDay{Day: "2026-11-29", Arm: "gone", ExposedUsers: 99}) // an arm the phase does not have
	got, err := results.Compute(e, in, now)
	require.NoError(t, err)

	want, err := stats.Analyze(stats.Input{Arms: []stats.Arm{{Weight: 0.4, Exposed: 5000, Clicked: 250}, {Weight: 0.4, Exposed: 5100, Clicked: 300},
		{Weight: 0.2, Exposed: 2400, Clicked: 110}}, Control: 2, Now: now, PlannedEnd: end})
	require.NoError(t, err)
	for i, a := range got.Arms {
		assert.Equal(t, want.Arms[i], *a.Rate, a.Key)
	}
	assert.Equal(t, want.Comparisons[0], *got.Arms[0].Comparison)
	assert.Equal(t, want.Comparisons[1], *got.Arms[1].Comparison)
	assert.Nil(t, got.Arms[2].Comparison)
	assert.Equal(t, want.SampleRatio, got.SampleRatio)
	assert.Equal(t, want.Verdict.Reason, got.Reason)
	require.Len(t, got.Days, 6, "the unknown arm's row left out")
	assert.Equal(t, results.ArmDay{Day: "2026-11-29", Arm: "a", ExposedUsers: 2500, Exposures: 5000, ClickedUsers: 125, Closes: 1}, got.Days[0],
		"by day, then arm")
	assert.Equal(t, "control", got.Days[2].Arm)
}

func TestPhaseFindsAnEarlierPhaseOfTheSameExperiment(t *testing.T) {
	t.Parallel()
	exp := func(phase int, salt string) *popup.Experiment { return &popup.Experiment{Phase: phase, Salt: salt} }
	rev := func(e *popup.Experiment) popup.Revision { return popup.Revision{Popup: popup.Popup{Experiment: e}} }
	cur := exp(3, "s3")
	// Newest first: phase 3, two revisions of phase 2 (the newer one is its last state), phase
	// 1, then no experiment, then an older experiment's phases 2 and 1.
	history := []popup.Revision{rev(cur), rev(exp(2, "s2-last")), rev(exp(2, "s2-first")), rev(exp(1, "s1")), rev(nil),
		rev(exp(2, "old2")), rev(exp(1, "old1"))}
	tests := []struct {
		name     string
		history  []popup.Revision
		phase    int
		wantSalt string // "" = not found
	}{
		{name: "the current phase", history: nil, phase: 3, wantSalt: "s3"},
		{name: "an earlier phase as it was last", history: history, phase: 2, wantSalt: "s2-last"},
		{name: "the first phase", history: history, phase: 1, wantSalt: "s1"},
		{name: "a later phase", history: history, phase: 4},
		{name: "phase 0", history: history, phase: 0},
		{name: "an older experiment's phase is not this one's", history: []popup.Revision{rev(cur), rev(nil), rev(exp(2, "old2"))}, phase: 2},
		{name: "a phase numbered higher before it is another experiment", history: []popup.Revision{rev(exp(2, "s2")), rev(exp(5, "x")), rev(exp(1, "y"))}, phase: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := results.Phase(cur, tt.history, tt.phase)
			assert.Equal(t, tt.wantSalt != "", ok)
			if ok {
				assert.Equal(t, tt.wantSalt, got.Salt)
			}
		})
	}
}

func TestComputeOneVariantAndAShowNothingControlIsASingleArm(t *testing.T) {
	t.Parallel()
	e := &popup.Experiment{Phase: 1, Salt: "s", Variants: []popup.Variant{{Key: "a", Weight: 80}},
		Control: &popup.Control{Weight: 20, Mode: popup.ControlNone}}
	got, err := results.Compute(e, days(map[string]int64{"a": 8000, "control": 2000}, map[string]int64{"a": 400}), now)
	require.NoError(t, err)
	assert.Equal(t, "a", got.Baseline)
	assert.Equal(t, stats.ReasonSingleArm, got.Reason, "nothing to compare the variant with")
	assert.Equal(t, 1, got.SampleRatio.DF, "the control still counts in the ratio check")
	assert.NotNil(t, got.Arms[0].Rate)
	assert.Nil(t, got.Arms[1].Rate)
}

// How long until a decision: stats.Needed of the analysed arms, made the whole experiment's
// (a control that shows nothing takes its share of the users too), at the phase's rate so far.
func TestComputeNeed(t *testing.T) {
	t.Parallel()
	started := now.Add(-48 * time.Hour)
	tests := []struct {
		name string
		mode popup.ControlMode
		want *results.Need
	}{
		// a 5%, b 6%: 8155 users an arm (stats.TestNeeded); a and b take 50% each: 16310 in all, 2000 seen
		{"two variants", "", &results.Need{Leader: "b", MoreUsers: 14310, PerDay: 1000}},
		// the variants are 80% of the users: 14310 more variant users are 17888 users in all
		{"beside a control that shows nothing", popup.ControlNone, &results.Need{Leader: "b", MoreUsers: 17888, PerDay: 1250}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := experiment(tt.mode)
			e.PhaseStartedAt = &started
			exposed, clicked := map[string]int64{"a": 1000, "b": 1000}, map[string]int64{"a": 50, "b": 60}
			if tt.mode != "" {
				exposed["control"] = 500
			}
			res, err := results.Compute(e, days(exposed, clicked), now)
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Need)
		})
	}
}
