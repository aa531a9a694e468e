package simtest_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/results"
	"popupsvc/internal/experiment/simtest"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// Simulations of experiments decided on a goal (docs/CONTRACT.md §14) through the real
// assignment (popup.Assigner) and the results the admin API answers (results.Compute, then
// results.AddGoals): the counts are what the worker's attribution would write for users who
// click and convert with the given probabilities. The simulation through the real service is
// not built yet.

// purchase is the goal the simulated experiments decide on.
var purchase = popup.Goal{Key: "purchase", Name: "Purchase", Window: 72 * time.Hour, Value: popup.GoalValueNone}

// simulate assigns users n0 … n0+users-1 of exp and draws their clicks and conversions with the
// rates of their arm; it returns the phase's days (one) and goal counts.
func simulate(exp *popup.Experiment, rng *rand.Rand, n0, users int, ctr, conv []float64, into map[string]*[2]report.ExperimentDay) {
	as := popup.NewAssigner(exp)
	for n := n0; n < n0+users; n++ {
		arm := as.Assign(uid(n))
		if arm < 0 {
			continue
		}
		d := into[exp.ArmKey(arm)]
		d[0].ExposedUsers++
		d[0].Exposures++
		if rng.Float64() < ctr[arm] {
			d[0].ClickedUsers++
			d[0].Clicks++
		}
		if rng.Float64() < conv[arm] {
			d[1].ClickedUsers++ // the arm's converted users
		}
	}
}

// look is the results of the counts so far, decided on the primary goal.
func look(t *testing.T, exp *popup.Experiment, counts map[string]*[2]report.ExperimentDay, now time.Time) results.Results {
	t.Helper()
	var days []report.ExperimentDay
	var goals []report.GoalCount
	for arm, d := range counts {
		day := d[0]
		day.Day, day.Arm = "2026-11-01", arm
		days = append(days, day)
		goals = append(goals, report.GoalCount{Arm: arm, Goal: purchase.Key, ConvertedUsers: d[1].ClickedUsers, Conversions: d[1].ClickedUsers})
	}
	res, err := results.Compute(exp, days, now)
	require.NoError(t, err)
	require.NoError(t, results.AddGoals(&res, exp, []popup.Goal{purchase}, goals, now))
	return res
}

func emptyCounts(exp *popup.Experiment) map[string]*[2]report.ExperimentDay {
	out := map[string]*[2]report.ExperimentDay{}
	for i := range exp.ArmCount() {
		out[exp.ArmKey(i)] = &[2]report.ExperimentDay{}
	}
	return out
}

// TestPrimaryGoalNamesTheArmThatConverts: 20,000 users, two variants clicking alike (5%) and
// converting at 5% (a) and 6.5% (b), read once after the planned end: the primary goal names b.
func TestPrimaryGoalNamesTheArmThatConverts(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, 14)
	exp := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: "5eed0c0a7e1d2b36",
		Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}}, PlannedEndAt: &end, PrimaryGoal: purchase.Key}
	counts := emptyCounts(exp)
	simulate(exp, rand.New(rand.NewPCG(36, 1)), 0, 20_000, []float64{0.05, 0.05}, []float64{0.05, 0.065}, counts)
	res := look(t, exp, counts, end)
	for _, a := range res.Arms {
		g := a.Goals[0]
		t.Logf("%s: %d users, CTR %.4f, converted %d (%.4f [%.4f, %.4f])", a.Key, a.ExposedUsers, a.Rate.CTR,
			g.ConvertedUsers, g.Rate.CTR, g.Rate.CI.Lower, g.Rate.CI.Upper)
	}
	assert.Equal(t, "purchase", res.PrimaryGoal)
	assert.Equal(t, "b", res.Winner, "the verdict on the primary goal (reason %s)", res.Reason)
}

// TestAAOnConversionsThroughTheAssignment: A/A experiments decided on a goal, 100 repetitions
// (a new salt each) of 2,000 users a day looked at daily for 14 days, converting at 5% whatever
// the arm, stopping at the first look that names a winner: every winner is false, and there may be
// no more of them than a 5% rule would call with 99% probability.
func TestAAOnConversionsThroughTheAssignment(t *testing.T) {
	t.Parallel()
	const reps, looks, usersPerDay = 100, 14, 2000
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, looks)
	rng := rand.New(rand.NewPCG(36, 2))
	salts := rand.New(rand.NewPCG(36, 3))
	falseWinners := 0
	for range reps {
		exp := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1,
			Salt:     fmt.Sprintf("%016x", salts.Uint64()),
			Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}}, PlannedEndAt: &end, PrimaryGoal: purchase.Key}
		counts := emptyCounts(exp)
		for day := range looks {
			simulate(exp, rng, day*usersPerDay, usersPerDay, []float64{0.05, 0.05}, []float64{0.05, 0.05}, counts)
			if res := look(t, exp, counts, start.AddDate(0, 0, day+1)); res.Winner != "" {
				falseWinners++
				break
			}
		}
	}
	limit := simtest.BinomialUpper(reps, stats.DefaultAlpha, 0.01)
	t.Logf("A/A on conversions, %d repetitions × %d daily looks × %d users: false winners %d (limit %d)", reps, looks, usersPerDay, falseWinners, limit)
	assert.LessOrEqual(t, falseWinners, limit)
}
