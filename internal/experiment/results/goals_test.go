package results_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

var (
	purchase = popup.Goal{Key: "purchase", Name: "Purchase", Window: 72 * time.Hour, Value: popup.GoalValueSum}
	signup   = popup.Goal{Key: "signup", Name: "Sign-up", Window: 24 * time.Hour, Value: popup.GoalValueNone}
)

func TestAddGoalsComparesEveryArmWithTheControl(t *testing.T) {
	t.Parallel()
	e := experiment(popup.ControlNone)
	res, err := results.Compute(e, days(map[string]int64{"a": 8000, "b": 8000, "control": 4000}, map[string]int64{"a": 400, "b": 800}), now)
	require.NoError(t, err)
	require.Equal(t, "b", res.Winner, "the click-through rate decides without a primary goal")
	counts := []report.GoalCount{
		{Arm: "a", Goal: "purchase", ConvertedUsers: 400, Conversions: 450, ValueSum: 12000, ValueSqSum: 400 * 2000},
		{Arm: "b", Goal: "purchase", ConvertedUsers: 410, Conversions: 420, ValueSum: 12500, ValueSqSum: 410 * 2000},
		{Arm: "control", Goal: "purchase", ConvertedUsers: 120, Conversions: 130, ValueSum: 3000, ValueSqSum: 120 * 1500},
		{Arm: "gone", Goal: "purchase", ConvertedUsers: 5}, // an arm the phase no longer has
		{Arm: "a", Goal: "deleted", ConvertedUsers: 5},     // a goal that no longer exists
	}
	require.NoError(t, results.AddGoals(&res, e, []popup.Goal{signup, purchase}, counts, now))
	assert.Equal(t, "control", res.GoalBaseline, "a control that shows nothing has a conversion rate")
	assert.Empty(t, res.PrimaryGoal)
	assert.Equal(t, "b", res.Winner, "unchanged")
	for _, a := range res.Arms {
		require.Len(t, a.Goals, 2, a.Key)
		assert.Equal(t, "purchase", a.Goals[0].Goal, "by key")
		assert.Equal(t, "signup", a.Goals[1].Goal)
		assert.Zero(t, a.Goals[1].ConvertedUsers)
		assert.Nil(t, a.Goals[1].Value, "a goal without values has no mean")
		require.NotNil(t, a.Goals[0].Value)
		if a.Key == "control" {
			assert.Nil(t, a.Goals[0].Comparison)
			assert.Nil(t, a.Goals[0].ValueComparison)
			continue
		}
		require.NotNil(t, a.Goals[0].Comparison)
		require.NotNil(t, a.Goals[0].ValueComparison)
	}
	a := res.Arms[0].Goals[0]
	assert.InDelta(t, 400.0/8000, a.Rate.CTR, 1e-12)
	assert.InDelta(t, 400.0/8000-120.0/4000, a.Comparison.Difference, 1e-12)
	assert.InDelta(t, 12000.0/8000, a.Value.Mean, 1e-12)
	assert.InDelta(t, 12000.0/8000-3000.0/4000, a.ValueComparison.Difference, 1e-12)
	// The same numbers as the statistics of the totals, with the control as the baseline.
	want, err := stats.Analyze(stats.Input{Control: 2, Now: now, Options: results.DefaultOptions, Arms: []stats.Arm{
		{Weight: 0.4, Exposed: 8000, Clicked: 400}, {Weight: 0.4, Exposed: 8000, Clicked: 410}, {Weight: 0.2, Exposed: 4000, Clicked: 120}}})
	require.NoError(t, err)
	assert.Equal(t, want.Comparisons[1], *res.Arms[1].Goals[0].Comparison)
}

func TestAddGoalsPrimaryGoalDecidesTheVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		exposed    map[string]int64
		converted  map[string]int64
		wantWinner string
		wantReason stats.Reason
	}{
		{"the arm that converts more wins though it clicks less", map[string]int64{"a": 10000, "b": 10000},
			map[string]int64{"a": 500, "b": 650}, "b", stats.ReasonSequential},
		{"equal conversion: no winner, whatever the clicks", map[string]int64{"a": 10000, "b": 10000},
			map[string]int64{"a": 500, "b": 500}, "", stats.ReasonNoDifference},
		{"too few conversions", map[string]int64{"a": 10000, "b": 10000},
			map[string]int64{"a": 5, "b": 20}, "", stats.ReasonMinSample},
		{"a sample-ratio mismatch voids it", map[string]int64{"a": 10000, "b": 8000},
			map[string]int64{"a": 500, "b": 650}, "", stats.ReasonSRM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := experiment("")
			e.PrimaryGoal = "purchase"
			res, err := results.Compute(e, days(tt.exposed, map[string]int64{"a": 900, "b": 400}), now)
			require.NoError(t, err)
			var counts []report.GoalCount
			for arm, n := range tt.converted {
				counts = append(counts, report.GoalCount{Arm: arm, Goal: "purchase", ConvertedUsers: n, Conversions: n})
			}
			require.NoError(t, results.AddGoals(&res, e, []popup.Goal{purchase}, counts, now))
			assert.Equal(t, "purchase", res.PrimaryGoal)
			assert.Equal(t, "a", res.GoalBaseline, "without a control, the first variant")
			assert.Equal(t, tt.wantWinner, res.Winner)
			assert.Equal(t, tt.wantReason, res.Reason)
		})
	}
}
