package simtest_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/experiment/simtest"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// TestHoldoutRecoversTheLiftOfPopups: a 10% global holdout (docs/CONTRACT.md §15) through the
// real membership test (popup.HoldoutCheck) and the results the admin API answers
// (results.Holdout), over 100 repetitions of 100,000 users whom the popups would all reach. The
// users held out convert at 5%, the others, shown popups, 10% more (5.5%): the lift interval
// holds the true +10% as often as a 95% interval should (its misses within what a 5% rule
// misses with 99.9% probability), the lifts average to it, and the split passes the
// sample-ratio check. The counts are what the worker's rollup and attribution would write.
func TestHoldoutRecoversTheLiftOfPopups(t *testing.T) {
	t.Parallel()
	const (
		reps, users = 100, 100_000
		base, lift  = 0.05, 0.10
	)
	h := popup.Holdout{Percent: 10, Salt: "5eedh01d0u7a11ed", Phase: 1, StartedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	check := h.Check()
	held := make([]bool, users)
	days := []report.ExperimentDay{{Day: "2026-11-01", Arm: string(popup.HoldoutHeld)}, {Day: "2026-11-01", Arm: string(popup.HoldoutOthers)}}
	for n := range users {
		held[n] = check.Holds(uid(n))
		g := 1
		if held[n] {
			g = 0
		}
		days[g].ExposedUsers++
		days[g].Exposures++
	}
	now := h.StartedAt.AddDate(0, 0, 30)
	rng := rand.New(rand.NewPCG(36, 15))
	misses, liftSum := 0, 0.0
	for r := range reps {
		var converted [2]int64
		for n := range users {
			g, p := 1, base*(1+lift)
			if held[n] {
				g, p = 0, base
			}
			if rng.Float64() < p {
				converted[g]++
			}
		}
		counts := []report.GoalCount{
			{Arm: string(popup.HoldoutHeld), Goal: purchase.Key, ConvertedUsers: converted[0], Conversions: converted[0]},
			{Arm: string(popup.HoldoutOthers), Goal: purchase.Key, ConvertedUsers: converted[1], Conversions: converted[1]},
		}
		res, err := results.Holdout(h, days, []popup.Goal{purchase}, counts, now)
		require.NoError(t, err)
		require.False(t, res.SampleRatio.SRM, "the split follows holdout_percent (p %.3g)", res.SampleRatio.P)
		require.Nil(t, res.Groups[0].Goals[0].Comparison, "the holdout is the baseline")
		c := res.Groups[1].Goals[0].Comparison
		require.NotNil(t, c)
		require.True(t, c.LiftBounded)
		if c.LiftCI.Excludes(lift) {
			misses++
		}
		liftSum += c.Lift
		if r == 0 {
			t.Logf("held out %d of %d users (%.2f%%); first repetition: lift %.3f [%.3f, %.3f]", days[0].ExposedUsers, users,
				100*float64(days[0].ExposedUsers)/users, c.Lift, c.LiftCI.Lower, c.LiftCI.Upper)
		}
	}
	limit := simtest.BinomialUpper(reps, 0.05, 0.001)
	t.Logf("%d repetitions: the lift interval missed the true +%.0f%% %d times (limit %d); mean lift %.4f", reps, 100*lift, misses, limit, liftSum/reps)
	assert.LessOrEqual(t, misses, limit)
	assert.InDelta(t, lift, liftSum/reps, 0.02, "the lifts average to the true lift")
}
