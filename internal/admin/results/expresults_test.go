package results_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/event"
	"popupsvc/internal/experiment/stats"
	"popupsvc/internal/mysqlstore"
)

// armCounts counts a phase's users per arm straight from popup_experiment_user.
func armCounts(t *testing.T, db *sql.DB, popupID int64, salt string) map[string][2]int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT arm, COUNT(*), SUM(first_click_at IS NOT NULL) FROM popup_experiment_user
		WHERE popup_id = ? AND salt = ? GROUP BY arm`, popupID, salt)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var arm string
		var n [2]int64
		require.NoError(t, rows.Scan(&arm, &n[0], &n[1]))
		out[arm] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// armEvents are the worker's events of users of one phase: each user exposed (an impression, or
// an exposure in the control) once or twice, and every clickEvery-th user clicking, twice.
func armEvents(popupID int64, salt, prefix string, users map[string]int, clickEvery map[string]int) []event.Event {
	at := time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)
	var out []event.Event
	for arm, n := range users {
		for u := range n {
			uid := fmt.Sprintf("%s-%s-%d", prefix, arm, u)
			ref := []event.ArmRef{{PopupID: popupID, Salt: salt, Arm: arm}}
			when := at.Add(time.Duration(u) * time.Minute)
			exposure := event.Event{ID: uid + "-x", UID: uid, PopupID: popupID, Action: event.Impression, At: when, Impressions: 1, Arms: ref}
			if arm == "control" {
				exposure.Action = event.Exposure
			}
			out = append(out, exposure)
			if u%3 == 0 {
				again := exposure
				again.ID, again.At = uid+"-y", when.Add(time.Hour)
				out = append(out, again)
			}
			if k := clickEvery[arm]; k > 0 && u%k == 0 {
				for c := range 2 {
					out = append(out, event.Event{ID: fmt.Sprintf("%s-c%d", uid, c), UID: uid, PopupID: popupID, Action: event.Click,
						At: when.Add(time.Duration(c+1) * 2 * time.Hour), Arms: ref})
				}
			}
		}
	}
	return out
}

func TestExperimentResultsAreTheStatsOfTheRollup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := apitest.NewClock()
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, clk)
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	require.NoError(t, err)
	defer db.Close()

	id := api.CreatePopup(t, map[string]any{"name": "results", "status": "draft"})
	put := func(a, b int) string {
		res := api.AdminDo(t, http.MethodPut, fmt.Sprintf("/admin/v1/popups/%d", id), map[string]any{"name": "results", "status": "draft",
			"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": a, "title": "A"}, {"key": "b", "weight": b, "title": "B"}},
				"control": map[string]any{"weight": 20, "mode": "none"}}})

		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		return res.Body["experiment"].(map[string]any)["salt"].(string)
	}
	salt1 := put(40, 40)
	res := api.AdminDo(t, http.MethodPost, fmt.Sprintf("/admin/v1/popups/%d/experiment/start", id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	salt2 := put(50, 30) // new weights once phase 1 has run: phase 2, a new salt
	require.NotEqual(t, salt1, salt2)

	// Phase 1 as the weights say; phase 2 with half the control's users lost.
	w := mysqlstore.NewEventWriter(db)
	phase1 := armEvents(id, salt1, "p1", map[string]int{"a": 1600, "b": 1600, "control": 800}, map[string]int{"a": 20, "b": 10})
	phase2 := armEvents(id, salt2, "p2", map[string]int{"a": 500, "b": 300, "control": 100}, map[string]int{"a": 10, "b": 10})
	for _, batch := range [][]event.Event{phase1[:3000], phase1, phase1[2000:], phase2, phase2} {
		require.NoError(t, w.WriteBatch(ctx, batch), "batches written again count once")
	}

	get := func(query string) expResults {
		res := api.AdminDo(t, http.MethodGet, fmt.Sprintf("/admin/v1/popups/%d/experiment/results%s", id, query), nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		var out expResults
		require.NoError(t, json.Unmarshal([]byte(res.Raw), &out))
		return out
	}
	// expect is the stats package on the counts of popup_experiment_user: the variants compared
	// (the control shows nothing), every arm in the ratio check.
	expect := func(salt string, weights [3]float64) (variants, all stats.Result) {
		n := armCounts(t, db, id, salt)
		arms := []stats.Arm{{Weight: weights[0], Exposed: n["a"][0], Clicked: n["a"][1]}, {Weight: weights[1], Exposed: n["b"][0], Clicked: n["b"][1]},
			{Weight: weights[2], Exposed: n["control"][0], Clicked: n["control"][1]}}
		all, err := stats.Analyze(stats.Input{Arms: arms, Now: clk.Now()})
		require.NoError(t, err)
		v := arms[:2]
		sum := v[0].Weight + v[1].Weight
		v[0].Weight, v[1].Weight = v[0].Weight/sum, v[1].Weight/sum
		variants, err = stats.Analyze(stats.Input{Arms: v, Now: clk.Now()})
		require.NoError(t, err)
		return variants, all
	}

	one := get("?phase=1")
	assert.Equal(t, 1, one.Phase)
	assert.Equal(t, salt1, one.Salt)
	assert.Equal(t, "a", one.Baseline)
	v, all := expect(salt1, [3]float64{0.4, 0.4, 0.2})
	require.Len(t, one.Arms, 3)
	assert.Equal(t, int64(1600), one.Arms[0].ExposedUsers)
	assert.Equal(t, int64(80), one.Arms[0].ClickedUsers, "a user clicking twice is one clicked user")
	assert.Equal(t, int64(800), one.Arms[2].ExposedUsers)
	for i := range 2 {
		assert.Equal(t, v.Arms[i].CTR, *one.Arms[i].CTR)
		assert.Equal(t, [2]float64{v.Arms[i].CI.Lower, v.Arms[i].CI.Upper}, *one.Arms[i].CTRCI)
	}
	assert.Nil(t, one.Arms[0].Difference, "the baseline")
	assert.Nil(t, one.Arms[2].CTR, "a control that shows nothing has no rate")
	assert.Nil(t, one.Arms[2].Difference)
	c := v.Comparisons[0]
	assert.Equal(t, c.Difference, *one.Arms[1].Difference)
	assert.Equal(t, [2]float64{c.DiffCI.Lower, c.DiffCI.Upper}, *one.Arms[1].DifferenceCI)
	assert.Equal(t, c.PAdjusted, *one.Arms[1].PAdjusted)
	assert.Equal(t, c.Sequential.P, *one.Arms[1].SequentialP)
	assert.Equal(t, all.SampleRatio.ChiSquare, one.SRM.ChiSquare)
	assert.Equal(t, all.SampleRatio.P, one.SRM.P)
	assert.False(t, one.SRM.Alarm)
	assert.Equal(t, string(v.Verdict.Reason), one.Verdict.Reason)
	var exposed int64
	for _, d := range one.Days {
		exposed += d.ExposedUsers
	}
	assert.Equal(t, int64(4000), exposed, "the days sum to the users")

	two := get("")
	assert.Equal(t, 2, two.Phase)
	assert.Equal(t, salt2, two.Salt)
	_, all = expect(salt2, [3]float64{0.5, 0.3, 0.2})
	assert.Equal(t, all.SampleRatio.P, two.SRM.P)
	assert.True(t, two.SRM.Alarm, "the control lost half its users")
	assert.Equal(t, "srm", two.Verdict.Reason)
	assert.Nil(t, two.Verdict.Winner)
}
