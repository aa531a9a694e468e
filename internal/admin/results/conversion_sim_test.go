package results_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
)

// The conversion simulation through the real service (issue 36, item 7; docs/EXPERIMENTS.md,
// "End to end: a primary goal through the service"): make test runs a small case, the issue's
// 20,000 users are a flag away:
//
//	go test -tags jsoniter,nomsgpack -count=1 -run ConversionsSimulated -v ./internal/apiserver/ -args -conv-users=20000 -conv-rate-b=0.065
var (
	convUsers = flag.Int("conv-users", 3_000, "users of the end-to-end conversion simulation")
	convRateB = flag.Float64("conv-rate-b", 0.15, "variant b's true conversion rate in the end-to-end conversion simulation (a's is 5%)")
)

const (
	convClickRate = 0.05 // both variants' true click rate: the clicks do not tell them apart
	convRateA     = 0.05 // variant a's true conversion rate
	convGoal      = "purchase"
)

// convTally is what the simulated users of one arm were shown, did and reported.
type convTally struct {
	users, clicked, closes, converted int64
	value                             float64
}

// TestConversionsSimulatedThroughTheService: an experiment of two variants (a and b, 50/50) that
// users click alike (5%) and after which they buy at different rates (a 5%, b -conv-rate-b), with
// `purchase` (a sum goal) as its primary goal, through a real popup-api and popup-worker on MariaDB
// and Redis. -conv-users users ask once for a popup; each answer must be the variant the documented
// assignment gives the user (popup.Assigner under the phase's salt), the one the plan put it in,
// and its decision_id must name the arm. A user clicks or closes what it was shown, and buys with
// its arm's probability, for a value of 10.00-99.99; the app's backend reports the purchases
// through /api/v1/conversions/batch. Once the worker has drained, the results must count exactly the
// users, clicks, closes, buyers and values of each arm, the goal's statistics must be
// stats.Analyze's of those counts, and the verdict, read after the planned end as at the end of a
// fixed-horizon test, must name b on the primary goal.
//
// Deterministic: the salt is the server's, drawn afresh each run, but the harness plans its users
// under it (planUsers) so that each arm gets exactly half of them, and draws each user's clicks
// and purchases by (seed, arm, rank): every count, statistic and the verdict are the same in every
// run, at any -conv-users and -conv-rate-b. The sample-ratio check is thus exercised with an exact
// split (χ² = 0); the service's random split under many salts is internal/experiment/simtest's
// TestSplitOfTheServiceSimulations. make test's 3,000 users at 5% against 15% leave b's lead
// about 9 standard errors, the 5% against 6.5% at 20,000 users about 4.6: how often
// another seed's draw would miss it is in docs/EXPERIMENTS.md ("End to end: a primary goal
// through the service").
func TestConversionsSimulatedThroughTheService(t *testing.T) {
	t.Parallel()
	users := *convUsers
	rates := map[string]float64{"a": convRateA, "b": *convRateB}
	sim := newServiceSim(t, users)
	api := sim.api

	res := api.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": convGoal, "name": "Purchase", "value": "sum"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	// The planned end is now: the results are read after it, as at the end of a fixed-horizon
	// test (the simulation is its weeks in seconds).
	plannedEnd := time.Now().UTC().Truncate(time.Second)
	id := api.CreatePopup(t, apitest.PopupSpec("conv-sim", map[string]any{"priority": 10, "experiment": map[string]any{
		"coverage_percent": 100, "primary_goal": convGoal, "planned_end_at": plannedEnd.Format(time.RFC3339),
		"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}}))

	salt := sim.startExperiment(t, id)
	keys := []string{"a", "b"}
	plan := planByWeights(users, keys, []int{50, 50})
	planned, err := planUsers(plan, simArmGroup(&popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: salt,
		Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}}}))
	require.NoError(t, err)
	// The instance accepts the new goal (a conversion of a user nobody exposed counts nowhere).
	apitest.Eventually(t, 10*time.Second, "the goal is accepted", func() bool {
		return api.Conversion(t, map[string]any{"uid": "goal-probe", "goal": convGoal, "event_id": "probe"}).Status == http.StatusAccepted
	})

	suffix := "~" + apitest.Itoa(id) + "."
	behave := func(u simUser, shown simShown, rng *rand.Rand) (simDoes, error) {
		arm := slices.Index(keys, u.Group)
		switch {
		case shown.PopupID != id || shown.Variant != u.Group:
			return simDoes{}, fmt.Errorf("shown popup %d variant %q, the plan (the documented assignment) gives popup %d variant %q", shown.PopupID, shown.Variant, id, u.Group)
		case !strings.HasSuffix(shown.DecisionID, suffix+apitest.Itoa(int64(arm))):
			return simDoes{}, fmt.Errorf("decision_id %q does not name arm %d of popup %d", shown.DecisionID, arm, id)
		}
		var d simDoes
		switch x := rng.Float64(); {
		case x < convClickRate:
			d.Action = "click"
		case rng.Float64() < closeRate:
			d.Action = "close"
		}
		if rng.Float64() < rates[u.Group] {
			d.Conversions = []simConversion{{Goal: convGoal, Value: float64(1000+rng.IntN(9000)) / 100}}
		}
		return d, nil
	}
	stop := measure(t)
	visits, err := sim.drive(t.Context(), planned, behave)
	require.NoError(t, err)
	_, driven := stop()
	sim.drain(t)
	cpu, wall := stop()
	t.Logf("%d users: driven in %s, drained %s later; this process's CPU %s (popup-api, popup-worker and the clients; every test of the binary that runs meanwhile too)",
		users, driven.Round(time.Millisecond), (wall - driven).Round(time.Millisecond), cpu.Round(time.Millisecond))

	tally := map[string]*convTally{"a": {}, "b": {}}
	for _, v := range visits {
		c := tally[v.User.Group]
		c.users++
		switch v.Does.Action {
		case "click":
			c.clicked++
		case "close":
			c.closes++
		}
		for _, x := range v.Does.Conversions {
			c.converted++
			c.value += x.Value
		}
	}

	got := sim.experimentResults(t, id)
	require.NotNil(t, got.PrimaryGoal)
	assert.Equal(t, convGoal, *got.PrimaryGoal)
	assert.Equal(t, "a", got.GoalBaseline, "no control: the first variant is the goals' baseline")
	require.Len(t, got.Arms, 2)
	in := stats.Input{Arms: make([]stats.Arm, 2), Now: time.Now(), PlannedEnd: plannedEnd}
	for i, a := range got.Arms {
		want := tally[keys[i]]
		require.Equal(t, keys[i], a.Key)
		require.Len(t, a.Goals, 1, "one goal")
		g := a.Goals[0]
		require.NotNil(t, g.Rate, "%s's rate", a.Key)
		require.NotNil(t, g.RateCI, "%s's rate interval", a.Key)
		t.Logf("%s: %d users (%.2f%%), CTR %.4f (%d clicked, %d closes); %d bought (true rate %.3f): rate %.4f [%.4f, %.4f], value %.2f (%.3f a user)%s",
			a.Key, a.ExposedUsers, 100*float64(a.ExposedUsers)/float64(users), deref0(a.CTR), a.ClickedUsers, a.Closes, g.ConvertedUsers, rates[a.Key],
			*g.Rate, g.RateCI[0], g.RateCI[1], g.ValueSum, deref0(g.MeanValue), comparisonText(g))
		// Every user was shown their variant once and acted at most once; the results count
		// exactly what the clients saw, sent and bought.
		assert.Equal(t, want.users, a.ExposedUsers, "%s's exposed users", a.Key)
		assert.Equal(t, want.users, a.Exposures, "%s's exposures", a.Key)
		assert.Equal(t, want.clicked, a.ClickedUsers, "%s's clicked users", a.Key)
		assert.Equal(t, want.clicked, a.Clicks, "%s's clicks", a.Key)
		assert.Equal(t, want.closes, a.Closes, "%s's closes", a.Key)
		assert.Equal(t, convGoal, g.Goal)
		assert.Equal(t, want.converted, g.ConvertedUsers, "%s's buyers", a.Key)
		assert.Equal(t, want.converted, g.Conversions, "%s's purchases", a.Key)
		assert.InDelta(t, want.value, g.ValueSum, 1e-6*max(1, want.value), "%s's purchases' value", a.Key)
		if assert.NotNil(t, g.MeanValue, "%s's value per user", a.Key) {
			assert.InDelta(t, want.value/float64(want.users), *g.MeanValue, 1e-9, "%s's value per user", a.Key)
		}
		assert.Equal(t, int64(plan[i].Users), a.ExposedUsers, "%s's users: the plan's", a.Key)
		in.Arms[i] = stats.Arm{Weight: 0.5, Exposed: want.users, Clicked: want.converted}
	}
	t.Logf("SRM χ²=%.3f p=%.3f alarm=%v; verdict on %s: %s (%s)", got.SRM.ChiSquare, got.SRM.P, got.SRM.Alarm, convGoal,
		deref(got.Verdict.Winner), got.Verdict.Reason)
	assert.False(t, got.SRM.Alarm, "sample-ratio mismatch of the planned split")

	// The goal's statistics are stats.Analyze's of the clients' own counts, a buyer for a clicker.
	want, err := stats.Analyze(in)
	require.NoError(t, err)
	for i, a := range got.Arms {
		g := a.Goals[0]
		assert.InDelta(t, want.Arms[i].CTR, *g.Rate, 1e-9, "%s's rate", a.Key)
		assert.InDelta(t, want.Arms[i].CI.Lower, g.RateCI[0], 1e-9, "%s's rate interval", a.Key)
		assert.InDelta(t, want.Arms[i].CI.Upper, g.RateCI[1], 1e-9, "%s's rate interval", a.Key)
	}
	require.Len(t, want.Comparisons, 1)
	c, b := want.Comparisons[0], got.Arms[1].Goals[0]
	if assert.NotNil(t, b.Difference) && assert.NotNil(t, b.PAdjusted) && assert.NotNil(t, b.SequentialP) {
		assert.InDelta(t, c.Difference, *b.Difference, 1e-9, "b's difference")
		assert.InDelta(t, c.PAdjusted, *b.PAdjusted, 1e-9, "b's adjusted p")
		assert.InDelta(t, c.Sequential.P, *b.SequentialP, 1e-9, "b's sequential p")
	}
	assert.Equal(t, string(want.Verdict.Reason), got.Verdict.Reason)
	require.NotNil(t, got.Verdict.Winner, "a winner on the primary goal (reason %s)", got.Verdict.Reason)
	assert.Equal(t, "b", *got.Verdict.Winner, "the arm that sells more")
}

// comparisonText is a goal's comparison with the baseline for the log; "" for the baseline.
func comparisonText(g expGoal) string {
	if g.Difference == nil || g.DifferenceCI == nil {
		return ""
	}
	return fmt.Sprintf("; vs baseline %+.4f [%+.4f, %+.4f], lift %+.3f, adjusted p %.2g, sequential p %.2g",
		*g.Difference, g.DifferenceCI[0], g.DifferenceCI[1], deref0(g.Lift), deref0(g.PAdjusted), deref0(g.SequentialP))
}

func deref0(x *float64) float64 {
	if x == nil {
		return math.NaN()
	}
	return *x
}
