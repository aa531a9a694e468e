package simtest_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/simtest"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
)

// splitSalts is the number of salts TestSplitOfTheServiceSimulations draws; docs/EXPERIMENTS.md
// quotes a run with more.
var splitSalts = flag.Int("split-salts", 200, "salts of the split check of the simulations through the service")

// TestSplitOfTheServiceSimulations: the sample-ratio behaviour of the service's random split, for
// the experiments the simulations through the real service run (internal/apiserver,
// experiment_sim_test.go and conversion_sim_test.go). Those plan their users so that every arm
// gets an exact share whatever salt the server draws (their outcome is then the same in every
// run), which exercises the sample-ratio check with an exact split only. Here popup.Assigner, the
// code the service runs, splits the same candidates (sim-0, sim-1, …, as that harness names them)
// under many salts drawn as the server draws them (16 hex characters, but seeded): a correct split
// must raise the SRM alarm at no more than its 0.1% level (at most the 99% binomial bound of
// that rate over the salts), no more than 5% of salts may reach p < 0.05 (the same bound), and
// no arm's share may stray more than 6.7 standard errors from its weight (one percentage point of
// a third at 100,000 users) under any salt.
func TestSplitOfTheServiceSimulations(t *testing.T) {
	tests := []struct {
		name  string
		users int
		exp   popup.Experiment
	}{
		{
			name: "clicks: a, b and a control that falls through, 34/33/33", users: 5_000,
			exp: popup.Experiment{
				Variants: []popup.Variant{{Key: "a", Weight: 34}, {Key: "b", Weight: 33}},
				Control:  &popup.Control{Weight: 33, Mode: popup.ControlFallThrough},
			},
		},
		{
			name: "conversions: a and b, 50/50", users: 3_000,
			exp: popup.Experiment{Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}}},
		},
	}
	salts := *splitSalts
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uids := make([]string, tt.users)
			for n := range uids {
				uids[n] = "sim-" + strconv.Itoa(n)
			}
			draw := rand.New(rand.NewPCG(23, 13))
			exp := tt.exp
			exp.Status, exp.CoveragePercent, exp.Phase = popup.ExperimentRunning, 100, 1
			arms := exp.ArmCount()
			var alarms, below05 int
			worst := 0.0 // the largest distance of a share from its weight, in standard errors
			for range salts {
				exp.Salt = fmt.Sprintf("%016x", draw.Uint64())
				as := popup.NewAssigner(&exp)
				counts := make([]stats.Arm, arms)
				for i := range counts {
					counts[i].Weight = float64(exp.ArmWeight(i)) / 100
				}
				for _, uid := range uids {
					arm := as.Assign(uid)
					if arm < 0 {
						require.Failf(t, "coverage 100% takes everybody", "%s under salt %s is left out", uid, exp.Salt)
					}
					counts[arm].Exposed++
				}
				res, err := stats.Analyze(stats.Input{Arms: counts, Control: max(0, exp.ArmIndex(popup.ControlArm))}) // no control: the first variant
				require.NoError(t, err)
				alarms += b2i(res.SampleRatio.SRM)
				below05 += b2i(res.SampleRatio.P < 0.05)
				for _, c := range counts {
					se := math.Sqrt(c.Weight * (1 - c.Weight) / float64(tt.users))
					worst = max(worst, math.Abs(float64(c.Exposed)/float64(tt.users)-c.Weight)/se)
				}
			}
			alarmLimit := simtest.BinomialUpper(salts, stats.DefaultSRMAlpha, 0.01)
			below05Limit := simtest.BinomialUpper(salts, 0.05, 0.01)
			t.Logf("%d users × %d salts: SRM alarms %d (%.2f%%, limit %d), p < 0.05 in %d (%.1f%%, limit %d), the worst share %.2f standard errors from its weight",
				tt.users, salts, alarms, 100*float64(alarms)/float64(salts), alarmLimit,
				below05, 100*float64(below05)/float64(salts), below05Limit, worst)
			assert.LessOrEqual(t, alarms, alarmLimit, "SRM alarms of a correct split")
			assert.LessOrEqual(t, below05, below05Limit, "splits with p < 0.05")
			assert.Less(t, worst, 6.7, "the worst share's distance from its weight, in standard errors")
		})
	}
}
