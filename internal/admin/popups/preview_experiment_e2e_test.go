package popups_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/popup"
)

// Both previews answer exactly what the public API then answers the same user (issue 41, 1): a
// control with mode none gets no popup, a fall_through control the next popup, a variant its
// content; `arm` names the user's arm in the experiment and `arms` every arm the decision passed.
func TestPreviewAnswersWhatThePublicAPIServes(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	other := in.CreatePopup(t, apitest.PopupSpec("fallback", map[string]any{"priority": 1, "title": "Fallback"}))
	variants := []map[string]any{{"key": "a", "weight": 45, "title": "A"}, {"key": "discount", "weight": 45, "title": "Discount"}}
	body := apitest.PopupSpec("own", map[string]any{"priority": 10, "title": "Own",
		"experiment": map[string]any{"variants": variants, "control": map[string]any{"weight": 10, "mode": "none"}}})
	id := in.CreatePopup(t, body)

	for _, mode := range []string{"none", "fall_through"} {
		if mode == "fall_through" {
			p := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body
			p["experiment"].(map[string]any)["control"] = map[string]any{"weight": 10, "mode": mode}
			res := in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(id), p)
			require.Equal(t, http.StatusOK, res.Status, res.Raw)
		}
		res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		salt := res.Body["experiment"].(map[string]any)["salt"].(string)
		require.Equal(t, http.StatusOK, in.AdminDo(t, http.MethodPost, "/admin/v1/cache/reload", nil).Status)
		e := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Salt: salt,
			Variants: []popup.Variant{{Key: "a", Weight: 45}, {Key: "discount", Weight: 45}}, Control: &popup.Control{Weight: 10, Mode: popup.ControlMode(mode)}}
		users := apitest.ArmUsers(t, e, "x-"+mode+"-", 2)
		wantArm := []string{"a", "discount", "control"}
		for arm, uids := range users {
			for _, uid := range uids {
				q := "uid=" + uid + "&platform=ios&app_version=9.0.0"
				explained := in.AdminDo(t, http.MethodGet, "/admin/v1/preview?"+q, nil)
				require.Equal(t, http.StatusOK, explained.Status, explained.Raw)
				draft := in.AdminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": uid, "platform": "ios", "app_version": "9.0.0",
					"popup": in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body})
				require.Equal(t, http.StatusOK, draft.Status, draft.Raw)
				_, served := in.Get(t, q)
				for name, got := range map[string]apitest.Response{"GET preview": explained, "POST preview": draft} {
					assert.JSONEq(t, jsonOf(t, served.Body["popup"]), jsonOf(t, got.Body["popup"]), "%s of %s (%s, mode %s) is what the public API served", name, uid, wantArm[arm], mode)
					assert.Equal(t, wantArm[arm], got.Body["arm"], "%s names the arm of %s", name, uid)
					wantSteps := []any{map[string]any{"popup_id": float64(id), "arm": wantArm[arm]}}
					assert.Equal(t, wantSteps, got.Body["arms"], "%s: the arms the decision passed", name)
				}
				switch {
				case wantArm[arm] != "control":
					assert.Equal(t, wantArm[arm], served.Body["variant"])
					assert.Equal(t, float64(id), served.Body["popup"].(map[string]any)["id"])
				case mode == "none":
					assert.Nil(t, served.Body["popup"], "a control with mode none gets nothing")
				default:
					assert.Equal(t, float64(other), served.Body["popup"].(map[string]any)["id"], "a fall_through control gets the next popup")
				}
			}
		}
		res = in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/stop", nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// A write that changes the content a concluded experiment shipped (a rollback, a PUT, an import)
// is refused unless it ends the experiment (end_experiment=true), so the popup never says a variant
// shipped while the app serves other content (issue 41, 2; docs/CONTRACT.md §10).
func TestChangingShippedContentEndsTheExperiment(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.ShippedExperiment(t, "", "discount")
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	require.Equal(t, "Discount", res.Body["title"])
	rev := res.Body["revision"]

	refused := func(res apitest.Response, field string) {
		t.Helper()
		require.Equal(t, http.StatusConflict, res.Status, res.Raw)
		e := res.Body["error"].(map[string]any)
		assert.Equal(t, "experiment_shipped", e["code"])
		assert.Contains(t, e["message"], "end_experiment=true")
		assert.Equal(t, field, e["fields"].([]any)[0].(map[string]any)["field"])
		stored := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body
		assert.Equal(t, rev, stored["revision"], "nothing written")
		assert.Equal(t, "concluded", stored["experiment"].(map[string]any)["status"])
	}
	refused(in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/rollback", map[string]any{"revision": 1}), "experiment")
	p := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body
	p["title"] = "Reworded"
	refused(in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(id), p), "experiment")
	refused(in.AdminDo(t, http.MethodPost, "/admin/v1/import?dry_run=true", map[string]any{"popups": []any{p}}), "popups[0].experiment")
	refused(in.AdminDo(t, http.MethodPost, "/admin/v1/import", map[string]any{"popups": []any{p}}), "popups[0].experiment")
	bad := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/rollback?end_experiment=maybe", map[string]any{"revision": 1})
	require.Equal(t, http.StatusBadRequest, bad.Status, bad.Raw)
	assert.Contains(t, bad.Raw, "end_experiment")

	// with end_experiment=true the rollback writes the old content and removes the experiment:
	// what the popup says and what the app is served agree
	res = in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/rollback?end_experiment=true", map[string]any{"revision": 1})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "Own", res.Body["title"])
	assert.Nil(t, res.Body["experiment"], "the shipped state ended with the change")
	in.PublicPopup(t, "after-rollback", func(p map[string]any) bool { return p != nil && p["title"] == "Own" })
}

// The review of a new phase asks how many users keeping the assignment moves: counted user by
// user from the phase's rows in popup_experiment_user (issue 41, 3).
func TestReassignmentCountsTheUsersThatMove(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	id, _, e := in.StartedExperiment(t, "none")
	const users = 600
	wantMoved := apitest.CountedUsers(t, cfg.MySQLDSN, id, e, "r-", users)
	require.Positive(t, wantMoved)
	p := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body
	x := p["experiment"].(map[string]any)
	x["variants"].([]any)[0].(map[string]any)["weight"] = 20
	x["variants"].([]any)[1].(map[string]any)["weight"] = 70
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/reassignment", map[string]any{"popup": p})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, float64(users), res.Body["exposed_users"])
	assert.Equal(t, float64(wantMoved), res.Body["moved_users"])
	assert.Equal(t, 1.0, res.Body["phase"])
	assert.Equal(t, float64(2), in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil).Body["revision"], "nothing written")
}
