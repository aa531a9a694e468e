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

// TestHoldoutComparesTheOthersWithTheHoldout: the holdout is every goal's baseline, the others'
// comparison is the stats package's on the same counts, a sum goal has its mean value per user,
// rows of another arm are left out, and the sample-ratio check is against the percentage.
func TestHoldoutComparesTheOthersWithTheHoldout(t *testing.T) {
	t.Parallel()
	h := popup.Holdout{Percent: 10, Salt: "5a175a175a175a17", Phase: 2, StartedAt: now.Add(-7 * 24 * time.Hour)}
	counts := []popup.GoalCount{
		{Arm: "holdout", Goal: "purchase", ConvertedUsers: 50, Conversions: 60, ValueSum: 1000, ValueSqSum: 50 * 400},
		{Arm: "others", Goal: "purchase", ConvertedUsers: 540, Conversions: 700, ValueSum: 12000, ValueSqSum: 540 * 400},
		{Arm: "others", Goal: "signup", ConvertedUsers: 90},
		{Arm: "control", Goal: "purchase", ConvertedUsers: 7}, // not a group
	}
	res, err := results.Holdout(h, days(map[string]int64{"holdout": 1000, "others": 9000, "control": 5}, nil), []popup.Goal{signup, purchase}, counts, now)
	require.NoError(t, err)
	require.Len(t, res.Groups, 2)
	assert.Equal(t, "holdout", res.Groups[0].Key)
	assert.Equal(t, 10, res.Groups[0].Weight)
	assert.Equal(t, 90, res.Groups[1].Weight)
	assert.Equal(t, int64(9000), res.Groups[1].ExposedUsers)
	assert.False(t, res.SampleRatio.SRM)

	want, err := stats.Analyze(stats.Input{Arms: []stats.Arm{{Weight: 0.1, Exposed: 1000, Clicked: 50}, {Weight: 0.9, Exposed: 9000, Clicked: 540}},
		Now: now, Options: results.DefaultOptions})
	require.NoError(t, err)
	held, others := res.Groups[0].Goals, res.Groups[1].Goals
	require.Len(t, held, 2)
	assert.Equal(t, "purchase", held[0].Goal, "by key")
	assert.Nil(t, held[0].Comparison, "the baseline")
	require.NotNil(t, others[0].Comparison)
	assert.Equal(t, want.Comparisons[0], *others[0].Comparison)
	assert.Equal(t, want.Arms[0], held[0].Rate)
	require.NotNil(t, others[0].Value, "a sum goal")
	assert.InDelta(t, 12000.0/9000, others[0].Value.Mean, 1e-12)
	assert.Nil(t, others[1].Value, "signup carries no value")
	assert.Equal(t, int64(0), held[1].ConvertedUsers)

	skewed, err := results.Holdout(h, days(map[string]int64{"holdout": 1300, "others": 8700}, nil), nil, nil, now)
	require.NoError(t, err)
	assert.True(t, skewed.SampleRatio.SRM, "13% held out of a 10% holdout")
	assert.Empty(t, skewed.Groups[0].Goals)
}
