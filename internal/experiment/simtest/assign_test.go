package simtest_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/simtest"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
)

// aaRepetitions is the number of A/A experiments of TestAAThroughTheAssignment;
// docs/EXPERIMENTS.md quotes a run with more.
var aaRepetitions = flag.Int("aa-reps", 100, "repetitions of the A/A simulation through the real assignment")

// uid is the id of the simulated user n, as an app would send it.
func uid(n int) string { return "user-" + strconv.Itoa(n) }

// TestAAThroughTheAssignment: A/A experiments (two identical variants, 50/50, on half of the
// popup's users) where the service's own assignment (popup.Assigner: the documented hash, a new
// salt each repetition, the same users every time) decides who is in the experiment and in which
// arm. Every user in it clicks with probability 5% whatever the arm; 4,000 users arrive a day,
// the results are looked at daily for 14 days with the planned end at day 14, and the experiment
// stops at the first look whose verdict names a winner. Every winner is false: the rule must call
// no more of them than a 5% rule would with 99% probability, and the split must raise no more SRM
// alarms than its 0.1% level would. The stats package's own simulation (sim_test.go there) covers
// the rule itself with an ideal random split; this one adds the hash, the coverage gate and the
// arm ranges, with salts that must re-randomise the same users.
func TestAAThroughTheAssignment(t *testing.T) {
	const looks, usersPerDay, ctr = 14, 4000, 0.05
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, looks)
	reps := *aaRepetitions
	rng := rand.New(rand.NewPCG(23, 10))
	salts := rand.New(rand.NewPCG(23, 12)) // salts drawn as the server draws them (16 hex characters), but seeded

	var falseWinners, srmAlarms, covered int
	for range reps {
		exp := &popup.Experiment{
			Status: popup.ExperimentRunning, CoveragePercent: 50, Phase: 1,
			Salt:     fmt.Sprintf("%016x", salts.Uint64()),
			Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}},
		}
		as := popup.NewAssigner(exp)
		counts := []stats.Arm{{Weight: 0.5}, {Weight: 0.5}}
		var last stats.Result
		for day := range looks {
			for n := day * usersPerDay; n < (day+1)*usersPerDay; n++ {
				arm := as.Assign(uid(n))
				if arm < 0 {
					continue
				}
				counts[arm].Exposed++
				if rng.Float64() < ctr {
					counts[arm].Clicked++
				}
			}
			var err error
			last, err = stats.Analyze(stats.Input{Arms: counts, Now: start.AddDate(0, 0, day+1), PlannedEnd: end})
			require.NoError(t, err)
			if last.Verdict.Winner >= 0 {
				falseWinners++
				break
			}
		}
		srmAlarms += b2i(last.SampleRatio.SRM)
		covered += int(counts[0].Exposed + counts[1].Exposed)
	}
	winnerLimit := simtest.BinomialUpper(reps, stats.DefaultAlpha, 0.01)
	srmLimit := simtest.BinomialUpper(reps, stats.DefaultSRMAlpha, 0.01)
	t.Logf("A/A through the assignment, %d repetitions × %d daily looks × %d users (coverage 50%%): "+
		"false winners %d (%.1f%%, limit %d), SRM alarms at the last look %d (limit %d), users in coverage %.2f%%",
		reps, looks, usersPerDay, falseWinners, 100*float64(falseWinners)/float64(reps), winnerLimit,
		srmAlarms, srmLimit, 100*float64(covered)/float64(reps*looks*usersPerDay))
	assert.LessOrEqual(t, falseWinners, winnerLimit, "false winners")
	assert.LessOrEqual(t, srmAlarms, srmLimit, "SRM alarms of a correct split")
}

// TestThreeArmsThroughTheAssignment: 100,000 users assigned by popup.Assigner to two variants
// and a control that falls through (34/33/33), clicking with true rates 6% (a), 5.5% (b) and 5%
// (the control's users, on the popup they get instead): every arm's share is within one
// percentage point of its weight, the sample-ratio check does not alarm, and the verdict, with
// the falling-through control as the baseline (docs/CONTRACT.md §10), names a.
func TestThreeArmsThroughTheAssignment(t *testing.T) {
	const users = 100_000
	exp := &popup.Experiment{
		Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: "3f9a0c2b7d1e4a65",
		Variants: []popup.Variant{{Key: "a", Weight: 34}, {Key: "b", Weight: 33}},
		Control:  &popup.Control{Weight: 33, Mode: popup.ControlFallThrough},
	}
	ctr := []float64{0.06, 0.055, 0.05}
	as := popup.NewAssigner(exp)
	counts := make([]stats.Arm, exp.ArmCount())
	for i := range counts {
		counts[i].Weight = float64(exp.ArmWeight(i)) / 100
	}
	rng := rand.New(rand.NewPCG(23, 11))
	for n := range users {
		arm := as.Assign(uid(n))
		require.GreaterOrEqual(t, arm, 0, "coverage 100%% takes everybody")
		counts[arm].Exposed++
		if rng.Float64() < ctr[arm] {
			counts[arm].Clicked++
		}
	}

	control := exp.ArmIndex(popup.ControlArm)
	got, err := stats.Analyze(stats.Input{Arms: counts, Control: control})
	require.NoError(t, err)
	for i, c := range counts {
		share := float64(c.Exposed) / users
		t.Logf("%-7s %d users (%.2f%%, weight %d%%), %d clicked, CTR %.4f [%.4f, %.4f]", exp.ArmKey(i), c.Exposed,
			100*share, exp.ArmWeight(i), c.Clicked, got.Arms[i].CTR, got.Arms[i].CI.Lower, got.Arms[i].CI.Upper)
		assert.InDelta(t, counts[i].Weight, share, 0.01, "%s's share of the users", exp.ArmKey(i))
	}
	for _, c := range got.Comparisons {
		t.Logf("%s vs control: lift %+.3f [%+.3f, %+.3f], adjusted p %.2g, sequential p %.2g",
			exp.ArmKey(c.Arm), c.Lift, c.LiftCI.Lower, c.LiftCI.Upper, c.PAdjusted, c.Sequential.P)
	}
	t.Logf("SRM χ²=%.3f p=%.3f; verdict %+v", got.SampleRatio.ChiSquare, got.SampleRatio.P, got.Verdict)
	assert.False(t, got.SampleRatio.SRM, "sample-ratio mismatch")
	assert.Equal(t, exp.ArmIndex("a"), got.Verdict.Winner, "the winner (reason %s)", got.Verdict.Reason)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
