package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// armUsers returns, for each arm of a running experiment (by index, the control last), the first
// few uids with prefix the documented assignment puts in it.
func armUsers(t *testing.T, e *popup.Experiment, prefix string, each int) [][]string {
	t.Helper()
	a := popup.NewAssigner(e)
	out := make([][]string, e.ArmCount())
	for i := 0; i < 100_000; i++ {
		uid := prefix + itoa(int64(i))
		if arm := a.Assign(uid); arm >= 0 && len(out[arm]) < each {
			out[arm] = append(out[arm], uid)
		}
		full := true
		for _, us := range out {
			full = full && len(us) == each
		}
		if full {
			return out
		}
	}
	t.Fatalf("no %d users for every arm among 100,000", each)
	return nil
}

// Both previews answer exactly what the public API then answers the same user (issue 41, 1): a
// control with mode none gets no popup, a fall_through control the next popup, a variant its
// content; `arm` names the user's arm in the experiment and `arms` every arm the decision passed.
func TestPreviewAnswersWhatThePublicAPIServes(t *testing.T) {
	t.Parallel()
	in := start(t, testConfig(t), nil)
	other := in.createPopup(t, popupSpec("fallback", map[string]any{"priority": 1, "title": "Fallback"}))
	variants := []map[string]any{{"key": "a", "weight": 45, "title": "A"}, {"key": "discount", "weight": 45, "title": "Discount"}}
	body := popupSpec("own", map[string]any{"priority": 10, "title": "Own",
		"experiment": map[string]any{"variants": variants, "control": map[string]any{"weight": 10, "mode": "none"}}})
	id := in.createPopup(t, body)

	for _, mode := range []string{"none", "fall_through"} {
		if mode == "fall_through" {
			p := in.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil).Body
			p["experiment"].(map[string]any)["control"] = map[string]any{"weight": 10, "mode": mode}
			res := in.adminDo(t, http.MethodPut, "/admin/v1/popups/"+itoa(id), p)
			require.Equal(t, http.StatusOK, res.Status, res.Raw)
		}
		res := in.adminDo(t, http.MethodPost, "/admin/v1/popups/"+itoa(id)+"/experiment/start", nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		salt := res.Body["experiment"].(map[string]any)["salt"].(string)
		require.Equal(t, http.StatusOK, in.adminDo(t, http.MethodPost, "/admin/v1/cache/reload", nil).Status)
		e := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Salt: salt,
			Variants: []popup.Variant{{Key: "a", Weight: 45}, {Key: "discount", Weight: 45}}, Control: &popup.Control{Weight: 10, Mode: popup.ControlMode(mode)}}
		users := armUsers(t, e, "x-"+mode+"-", 2)
		wantArm := []string{"a", "discount", "control"}
		for arm, uids := range users {
			for _, uid := range uids {
				q := "uid=" + uid + "&platform=ios&app_version=9.0.0"
				explained := in.adminDo(t, http.MethodGet, "/admin/v1/preview?"+q, nil)
				require.Equal(t, http.StatusOK, explained.Status, explained.Raw)
				draft := in.adminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": uid, "platform": "ios", "app_version": "9.0.0",
					"popup": in.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil).Body})
				require.Equal(t, http.StatusOK, draft.Status, draft.Raw)
				_, served := in.get(t, q)
				for name, got := range map[string]response{"GET preview": explained, "POST preview": draft} {
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
		res = in.adminDo(t, http.MethodPost, "/admin/v1/popups/"+itoa(id)+"/experiment/stop", nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}
