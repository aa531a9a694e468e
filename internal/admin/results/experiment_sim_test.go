package results_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/popup"
)

// simUsers is how many users TestExperimentSimulatedThroughTheService drives; docs/EXPERIMENTS.md
// quotes the run, -args -sim-users=100000.
var simUsers = flag.Int("sim-users", 5_000, "users of the end-to-end experiment simulation")

// simArm is an arm of the simulated experiment as the test configures it and as its users behave.
type simArm struct {
	key    string
	weight int
	ctr    float64 // true probability that a user of the arm clicks what they are shown
}

// simArms: two variants and a control that falls through to another popup. The control's users
// click that popup at 5%, a's at 15% and b's at 8%: a is the best arm, by a margin the sequential
// rule detects at 5,000 users (1,650-1,700 an arm: a's 10 points over the control are about 10
// standard errors, and a's 7 over b about 6), so the harness's seed draws no run that misses it.
var simArms = []simArm{{key: "a", weight: 34, ctr: 0.15}, {key: "b", weight: 33, ctr: 0.08}, {key: popup.ControlArm, weight: 33, ctr: 0.05}}

// closeRate is the probability that a user who does not click closes the popup.
const closeRate = 0.3

// simTally is what the simulated clients saw and sent, per arm.
type simTally struct {
	users, clicks, closes []int64
}

// simExperiment is the simulated experiment's phase under salt, as the service assigns it.
func simExperiment(salt string) *popup.Experiment {
	e := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: salt}
	for _, a := range simArms[:len(simArms)-1] {
		e.Variants = append(e.Variants, popup.Variant{Key: a.key, Weight: a.weight})
	}
	e.Control = &popup.Control{Weight: simArms[len(simArms)-1].weight, Mode: popup.ControlFallThrough}
	return e
}

// TestExperimentSimulatedThroughTheService is the simulated run: a popup with a 3-arm
// experiment (variants a and b, a control that falls through to a second popup, 34/33/33) is
// created and started through the admin API of a real popup-api, on MariaDB and Redis, with a
// real popup-worker draining its events. -sim-users users (5,000 by default, 100,000 for the
// documented run) each ask for a popup once through the public API and click, or close, what they
// are shown with their arm's known probability, sending the decision_id they got. Once the worker
// has written every event, the results endpoint must count exactly what the clients saw and sent,
// per arm; the variant each answer names must be the documented assignment's (popup.Assigner),
// which the plan gave the user; and the verdict must name a, the best arm. The statistics are
// checked against stats.Analyze of the clients' own counts.
//
// Deterministic: the salt is the server's, drawn afresh every run, but the harness plans its users
// under it (planUsers) so that each arm gets exactly its weight's share of them (34/33/33) and
// draws each user's clicks by (seed, arm, rank): every count, statistic and the verdict are the
// same in every run. The sample-ratio check is thus exercised with an exact split (χ² = 0, no
// alarm); how the service's random split behaves under many salts, the 0.1% of them that raise a
// correct alarm included, is internal/experiment/simtest's TestSplitOfTheServiceSimulations.
func TestExperimentSimulatedThroughTheService(t *testing.T) {
	t.Parallel()
	// Not RedisFacing: the Redis Cluster pass would run 5,000 users again for what the record
	// script's own tests (redisstore, run whole on the Cluster) already prove there.
	users := *simUsers
	sim := newServiceSim(t, users)
	api := sim.api

	// The popup users in the control fall through to, and the popup with the experiment above it.
	other := api.CreatePopup(t, apitest.PopupSpec("sim-other", map[string]any{"priority": 1}))
	variants := make([]map[string]any, 0, len(simArms)-1)
	for _, a := range simArms[:len(simArms)-1] {
		variants = append(variants, map[string]any{"key": a.key, "weight": a.weight, "title": "variant " + a.key,
			"content": "content " + a.key, "image_url": "", "link_url": "https://example.com/" + a.key, "buttons": []any{}, "ext": map[string]any{}})
	}
	id := api.CreatePopup(t, apitest.PopupSpec("sim-experiment", map[string]any{"priority": 10, "experiment": map[string]any{
		"coverage_percent": 100, "variants": variants, "planned_end_at": nil,
		"control": map[string]any{"weight": simArms[len(simArms)-1].weight, "mode": "fall_through"},
	}}))

	salt := sim.startExperiment(t, id)
	armOf := simArmGroup(simExperiment(salt))
	keys, weights := make([]string, len(simArms)), make([]int, len(simArms))
	for i, a := range simArms {
		keys[i], weights[i] = a.key, a.weight
	}
	plan := planByWeights(users, keys, weights)
	planned, err := planUsers(plan, armOf)
	require.NoError(t, err)

	// The preview names the arm each user would get, as the assignment says, recording nothing.
	for i := range 20 {
		uid := "preview-" + apitest.Itoa(int64(i))
		res := api.AdminDo(t, http.MethodGet, "/admin/v1/preview?uid="+uid+"&platform=ios&app_version=8.10.0", nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		assert.Equal(t, armOf(uid), res.Body["arm"], "uid %s: %s", uid, res.Raw)
	}

	control := len(simArms) - 1
	controlSuffix := "~" + apitest.Itoa(id) + "." + strconv.Itoa(control)
	// Each user clicks what it is shown with its arm's probability, else closes it with closeRate;
	// every answer is checked, as it comes, against the arm the plan gave the user (the documented
	// assignment's).
	armIndex := make(map[string]int, len(simArms))
	for i, a := range simArms {
		armIndex[a.key] = i
	}
	behave := func(u simUser, shown simShown, rng *rand.Rand) (simDoes, error) {
		arm, err := simArmOf(shown, armIndex[u.Group], id, other, controlSuffix)
		if err != nil {
			return simDoes{}, err
		}
		switch x := rng.Float64(); {
		case x < simArms[arm].ctr:
			return simDoes{Action: "click"}, nil
		case rng.Float64() < closeRate:
			return simDoes{Action: "close"}, nil
		}
		return simDoes{}, nil
	}
	began := time.Now()
	visits, err := sim.drive(t.Context(), planned, behave)
	require.NoError(t, err)
	drive := time.Since(began)
	sim.drain(t)
	t.Logf("%d users: driven in %s, drained %s later", users, drive.Round(time.Millisecond), (time.Since(began) - drive).Round(time.Millisecond))

	// What the clients saw and sent, per arm (the arm each answer was checked against).
	tally := simTally{users: make([]int64, len(simArms)), clicks: make([]int64, len(simArms)), closes: make([]int64, len(simArms))}
	for _, v := range visits {
		arm := armIndex[v.User.Group]
		tally.users[arm]++
		switch v.Does.Action {
		case "click":
			tally.clicks[arm]++
		case "close":
			tally.closes[arm]++
		}
	}
	got := sim.experimentResults(t, id)
	var otherStats struct {
		Totals struct{ Impressions, Clicks int64 } `json:"totals"`
	}
	res := api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(other)+"/stats", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &otherStats), res.Raw)

	assert.Equal(t, id, got.PopupID)
	assert.Equal(t, 1, got.Phase)
	assert.Equal(t, salt, got.Salt)
	require.Len(t, got.Arms, len(simArms))
	counts := make([]stats.Arm, len(simArms))
	for i, a := range got.Arms {
		want := simArms[i]
		share := float64(a.ExposedUsers) / float64(users)
		require.NotNil(t, a.CTR, "%s's CTR", a.Key)
		require.NotNil(t, a.CTRCI, "%s's CTR interval", a.Key)
		t.Logf("%-7s %d users (%.2f%%, weight %d%%), %d clicked (%d clicks), %d closes, CTR %.4f [%.4f, %.4f]",
			a.Key, a.ExposedUsers, 100*share, a.Weight, a.ClickedUsers, a.Clicks, a.Closes, *a.CTR, a.CTRCI[0], a.CTRCI[1])
		assert.Equal(t, want.key, a.Key)
		assert.Equal(t, want.weight, a.Weight, "%s's weight", a.Key)
		assert.Equal(t, want.key == popup.ControlArm, a.Control, "%s is the control", a.Key)
		assert.Equal(t, int64(plan[i].Users), a.ExposedUsers, "%s's users: the plan's", a.Key)
		// Each user asked once and acted at most once: users and events agree, and both are
		// exactly what the clients were shown (for the control: the fall-through answers) and sent.
		assert.Equal(t, tally.users[i], a.ExposedUsers, "%s's exposed users", a.Key)
		assert.Equal(t, tally.users[i], a.Exposures, "%s's exposures", a.Key)
		assert.Equal(t, tally.clicks[i], a.ClickedUsers, "%s's clicked users", a.Key)
		assert.Equal(t, tally.clicks[i], a.Clicks, "%s's clicks", a.Key)
		assert.Equal(t, tally.closes[i], a.Closes, "%s's closes", a.Key)
		counts[i] = stats.Arm{Weight: float64(want.weight) / 100, Exposed: tally.users[i], Clicked: tally.clicks[i]}
	}
	t.Logf("SRM χ²=%.3f df=%d p=%.3f alarm=%v; verdict %s (%s)", got.SRM.ChiSquare, got.SRM.DF, got.SRM.P, got.SRM.Alarm,
		deref(got.Verdict.Winner), got.Verdict.Reason)
	assert.False(t, got.SRM.Alarm, "sample-ratio mismatch of the planned split")
	assert.Equal(t, len(simArms)-1, got.SRM.DF)
	require.NotNil(t, got.Verdict.Winner, "a winner (reason %s)", got.Verdict.Reason)
	assert.Equal(t, "a", *got.Verdict.Winner)

	// The endpoint's statistics are stats.Analyze's, the control that falls through the baseline.
	want, err := stats.Analyze(stats.Input{Arms: counts, Control: control})
	require.NoError(t, err)
	assert.InDelta(t, want.SampleRatio.ChiSquare, got.SRM.ChiSquare, 1e-9)
	assert.InDelta(t, want.SampleRatio.P, got.SRM.P, 1e-9)
	assert.Equal(t, string(want.Verdict.Reason), got.Verdict.Reason)
	for i, a := range got.Arms {
		assert.InDelta(t, want.Arms[i].CTR, *a.CTR, 1e-9, "%s's CTR", a.Key)
		assert.InDelta(t, want.Arms[i].CI.Lower, a.CTRCI[0], 1e-9, "%s's CTR interval", a.Key)
		assert.InDelta(t, want.Arms[i].CI.Upper, a.CTRCI[1], 1e-9, "%s's CTR interval", a.Key)
	}
	for _, c := range want.Comparisons {
		a := got.Arms[c.Arm]
		t.Logf("%s vs control: lift %+.3f [%+.3f, %+.3f], adjusted p %.2g, sequential p %.2g",
			a.Key, c.Lift, c.LiftCI.Lower, c.LiftCI.Upper, c.PAdjusted, c.Sequential.P)
		if assert.NotNil(t, a.PAdjusted, "%s's adjusted p", a.Key) && assert.NotNil(t, a.SequentialP, "%s's sequential p", a.Key) {
			assert.InDelta(t, c.PAdjusted, *a.PAdjusted, 1e-9, "%s's adjusted p", a.Key)
			assert.InDelta(t, c.Sequential.P, *a.SequentialP, 1e-9, "%s's sequential p", a.Key)
		}
	}

	// The control's users were shown, and clicked, the popup they fell through to.
	assert.Equal(t, tally.users[control], otherStats.Totals.Impressions, "the fall-through popup's impressions are the control's exposures")
	assert.Equal(t, tally.clicks[control], otherStats.Totals.Clicks, "and its clicks the control's")
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

// simArmOf checks an answer against the arm the plan gave its user (want, the documented
// assignment's) and returns that arm.
func simArmOf(ans simShown, want int, exp, other int64, controlSuffix string) (int, error) {
	switch {
	case ans.PopupID == 0:
		return 0, errors.New("no popup: every user is in the experiment, and the control falls through")
	case ans.PopupID == exp:
		if ans.Variant != simArms[want].key {
			return 0, fmt.Errorf("shown variant %q, the documented assignment gives %q", ans.Variant, simArms[want].key)
		}
		if !strings.HasSuffix(ans.DecisionID, "~"+strconv.FormatInt(exp, 10)+"."+strconv.Itoa(want)) {
			return 0, fmt.Errorf("decision_id %q does not name arm %d of popup %d", ans.DecisionID, want, exp)
		}
		return want, nil
	case ans.PopupID == other:
		if simArms[want].key != popup.ControlArm {
			return 0, fmt.Errorf("fell through to popup %d, the documented assignment gives variant %q", other, simArms[want].key)
		}
		if ans.Variant != "" || !strings.HasSuffix(ans.DecisionID, controlSuffix) {
			return 0, fmt.Errorf("fall-through answer with variant %q and decision_id %q: want no variant and a decision_id ending in %q",
				ans.Variant, ans.DecisionID, controlSuffix)
		}
		return want, nil
	}
	return 0, fmt.Errorf("shown popup %d, neither the experiment's (%d) nor the fall-through's (%d)", ans.PopupID, exp, other)
}
