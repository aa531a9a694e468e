package results_test

import (
	"fmt"
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

// TestVerdictSimulatedThroughTheService (issue 49, "Done when"): the trap a click headline falls
// into, through a real popup-api and popup-worker on MariaDB and Redis. Variant a's users click 15%
// and buy 5%; b's click 5% and buy 15%; purchase (a sum goal) is the primary goal. The harness
// plans -conv-users users (exactly half in each arm under the server's salt) and draws each one's
// click and purchase by (seed, arm, rank), so every figure is the same in every run. After the
// drain the verdict the API answers must name b on purchase against a, its summary sentence must
// be about b converting more (never a clicking more), while the same clients' clicks alone would
// have named a; the variant Conclude pre-selects is the verdict's winner (the console offers
// verdict.winner: TestConsoleVerdictOnThePrimaryGoal), and concluding with it ships b's content,
// after which the summary says b was shipped.
func TestVerdictSimulatedThroughTheService(t *testing.T) {
	t.Parallel()
	users := *convUsers
	clickRate := map[string]float64{"a": 0.15, "b": 0.05}
	buyRate := map[string]float64{"a": 0.05, "b": 0.15}
	sim := newServiceSim(t, users)
	api := sim.api
	res := api.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": convGoal, "name": "Purchase", "value": "sum"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	plannedEnd := time.Now().UTC().Truncate(time.Second)
	id := api.CreatePopup(t, apitest.PopupSpec("verdict-sim", map[string]any{"priority": 10, "title": "Own", "experiment": map[string]any{
		"coverage_percent": 100, "primary_goal": convGoal, "planned_end_at": plannedEnd.Format(time.RFC3339),
		"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A clicks"}, {"key": "b", "weight": 50, "title": "B sells"}}}}))

	salt := sim.startExperiment(t, id)
	keys := []string{"a", "b"}
	plan := planByWeights(users, keys, []int{50, 50})
	planned, err := planUsers(plan, simArmGroup(&popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: salt,
		Variants: []popup.Variant{{Key: "a", Weight: 50}, {Key: "b", Weight: 50}}}))
	require.NoError(t, err)
	apitest.Eventually(t, 10*time.Second, "the goal is accepted", func() bool {
		return api.Conversion(t, map[string]any{"uid": "goal-probe", "goal": convGoal, "event_id": "probe"}).Status == http.StatusAccepted
	})

	suffix := "~" + apitest.Itoa(id) + "."
	behave := func(u simUser, shown simShown, rng *rand.Rand) (simDoes, error) {
		if shown.PopupID != id || shown.Variant != u.Group || !strings.HasSuffix(shown.DecisionID, suffix+apitest.Itoa(int64(slices.Index(keys, u.Group)))) {
			return simDoes{}, fmt.Errorf("shown popup %d variant %q (decision %q), the plan gives variant %q", shown.PopupID, shown.Variant, shown.DecisionID, u.Group)
		}
		var d simDoes
		switch x := rng.Float64(); {
		case x < clickRate[u.Group]:
			d.Action = "click"
		case rng.Float64() < closeRate:
			d.Action = "close"
		}
		if rng.Float64() < buyRate[u.Group] {
			d.Conversions = []simConversion{{Goal: convGoal, Value: float64(1000+rng.IntN(9000)) / 100}}
		}
		return d, nil
	}
	visits, err := sim.drive(t.Context(), planned, behave)
	require.NoError(t, err)
	sim.drain(t)

	clicks := stats.Input{Arms: make([]stats.Arm, 2), Now: time.Now(), PlannedEnd: plannedEnd}
	for i := range clicks.Arms {
		clicks.Arms[i].Weight = 0.5
	}
	for _, v := range visits {
		i := slices.Index(keys, v.User.Group)
		clicks.Arms[i].Exposed++
		if v.Does.Action == "click" {
			clicks.Arms[i].Clicked++
		}
	}
	byClicks, err := stats.Analyze(clicks)
	require.NoError(t, err)
	require.Equal(t, 0, byClicks.Verdict.Winner, "the trap is set: the clients' clicks alone name a (%+v)", clicks.Arms)

	got := sim.experimentResults(t, id)
	v := got.Verdict
	t.Logf("verdict: winner %s (%s) on %s against %s: %s", deref(v.Winner), v.Reason, v.Metric, v.Baseline, v.Summary)
	require.NotNil(t, v.Winner, "a winner on purchase (%s)", v.Reason)
	assert.Equal(t, "b", *v.Winner, "the verdict names the better converter")
	assert.Equal(t, convGoal, v.Metric)
	assert.Equal(t, "a", v.Baseline)
	assert.True(t, strings.HasPrefix(v.Summary, "“b” converts "), "the headline names the better converter: %s", v.Summary)
	assert.Contains(t, v.Summary, "more users to Purchase than “a”")
	assert.NotContains(t, v.Summary+v.Why, "click")

	// Conclude with the variant the console pre-selects (the verdict's winner): b's content ships.
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/conclude", map[string]any{"variant": *v.Winner})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	stored := api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body
	assert.Equal(t, "B sells", stored["title"], "the better converter's content is the popup's own")
	after := sim.experimentResults(t, id).Verdict
	require.NotNil(t, after.Shipped)
	assert.Equal(t, "b", after.Shipped.Variant)
	assert.Contains(t, after.Summary, "variant “b” was shipped as the popup's content for every user. The verdict on Purchase named it")
}
