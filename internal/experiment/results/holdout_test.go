package results_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// TestHoldoutComparesTheOthersWithTheHoldout: the holdout is every goal's baseline, the others'
// comparison is the stats package's on the same counts, a sum goal has its mean value per user,
// rows of another arm are left out, and the sample-ratio check is against the percentage.
func TestHoldoutComparesTheOthersWithTheHoldout(t *testing.T) {
	t.Parallel()
	h := popup.Holdout{Percent: 10, Salt: "5a175a175a175a17", Phase: 2, StartedAt: now.Add(-7 * 24 * time.Hour)}
	counts := []report.GoalCount{
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

// TestHoldoutEffectWordsTheIntervalItQuotes (issue 49): the words rest on the always-valid
// interval of the difference, and the sentence quotes that interval, in points, not the
// fixed-horizon lift's: a fixed-horizon interval that excludes 0 beside "no clear difference"
// (the page's old sentence) cannot happen.
func TestHoldoutEffectWordsTheIntervalItQuotes(t *testing.T) {
	t.Parallel()
	h := popup.Holdout{Percent: 10, Salt: "5a175a175a175a17", Phase: 1, StartedAt: now.Add(-7 * 24 * time.Hour)}
	tests := []struct {
		name             string
		held, others     int64 // converted users of 1,000 held out and 9,000 others
		wantEffect       string
		wantFixedExclude bool
	}{
		{"fixed horizon excludes 0, the always-valid interval does not", 35, 450, "unclear", true},
		{"confident rise", 30, 540, "raise", true},
		{"confident fall", 90, 450, "lower", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			counts := []report.GoalCount{{Arm: "holdout", Goal: "purchase", ConvertedUsers: tt.held}, {Arm: "others", Goal: "purchase", ConvertedUsers: tt.others}}
			res, err := results.Holdout(h, days(map[string]int64{"holdout": 1000, "others": 9000}, nil), []popup.Goal{purchase}, counts, now)
			require.NoError(t, err)
			c := res.Groups[1].Goals[0].Comparison
			require.NotNil(t, c)
			require.Equal(t, tt.wantFixedExclude, c.DiffCI.Excludes(0) && c.LiftCI.Excludes(0), "the case the test means")
			effects := res.Effects()
			require.Len(t, effects, 1)
			e := effects[0]
			assert.Equal(t, tt.wantEffect, e.Effect)
			assert.Equal(t, c.Sequential.CI, e.CI, "the interval of the words is the always-valid one")
			assert.Equal(t, tt.wantEffect != "unclear", e.CI.Excludes(0))
			assert.Contains(t, e.Summary, "always-valid 95% interval ["+fmtPoints(e.CI.Lower)+", "+fmtPoints(e.CI.Upper)+"] points")
			if tt.wantEffect == "unclear" {
				assert.Contains(t, e.Summary, "no clear difference yet")
				assert.Contains(t, e.Summary, "which holds 0")
			} else {
				assert.Contains(t, e.Summary, "the popups "+tt.wantEffect+" the conversion rate")
			}
		})
	}
}

// fmtPoints is a rate difference as the sentences write it.
func fmtPoints(d float64) string {
	s := strconv.FormatFloat(math.Abs(d)*100, 'f', 2, 64)
	if d < 0 {
		return "−" + s
	}
	return "+" + s
}
