package popups_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

func readyVersion(t *testing.T, in *apitest.Instance) float64 {
	t.Helper()
	res := in.Do(t, http.MethodGet, "http://"+in.Public+"/readyz", nil, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	return res.Body["config_version"].(float64)
}

func exportOf(t *testing.T, in *apitest.Instance) []any {
	t.Helper()
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/export", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	return res.Body["popups"].([]any)
}

func TestImportDryRunAndRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, nil)
	db := apitest.DB(t, cfg)
	kept := api.CreatePopup(t, apitest.PopupSpec("kept", nil))
	changed := api.CreatePopup(t, apitest.PopupSpec("changed", nil))
	archived := api.CreatePopup(t, apitest.PopupSpec("archived", nil))
	require.Equal(t, http.StatusOK, api.AdminDo(t, http.MethodDelete, "/admin/v1/popups/"+apitest.Itoa(archived), nil).Status)

	exported := exportOf(t, api)
	require.Len(t, exported, 2, "export leaves archived popups out")
	// The export imports back unchanged.
	res := api.AdminDo(t, http.MethodPost, "/admin/v1/import", map[string]any{"popups": exported})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, map[string]any{"created": 0.0, "updated": 0.0, "unchanged": 2.0, "dry_run": false}, res.Body)

	body := map[string]any{"popups": []any{
		exported[0],
		apitest.PopupSpec("changed", map[string]any{"priority": 7}),
		apitest.PopupSpec("new", nil),
		apitest.PopupSpec("archived", nil), // its namesake is archived: a new popup
	}}
	version := readyVersion(t, api)
	audits := countRows(t, db, "popup_audit")
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/import?dry_run=true", body)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, map[string]any{"created": 2.0, "updated": 1.0, "unchanged": 1.0, "dry_run": true}, res.Body)
	assert.Equal(t, exported, exportOf(t, api), "a dry run changes nothing")
	assert.Equal(t, audits, countRows(t, db, "popup_audit"))
	assert.Equal(t, version, readyVersion(t, api))

	res = api.AdminDo(t, http.MethodPost, "/admin/v1/import?dry_run=false", body)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, map[string]any{"created": 2.0, "updated": 1.0, "unchanged": 1.0, "dry_run": false}, res.Body)
	var bump int
	require.NoError(t, db.QueryRow("SELECT version FROM popup_config_version").Scan(&bump))
	assert.Equal(t, int(version)+1, bump, "one config version bump for the whole import")
	assert.Equal(t, version+1, readyVersion(t, api), "the import is served when it returns")
	assert.Equal(t, audits+3, countRows(t, db, "popup_audit"))

	res = api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(changed), nil)
	assert.EqualValues(t, 7, res.Body["priority"])
	assert.EqualValues(t, 2, res.Body["revision"])
	res = api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(kept), nil)
	assert.EqualValues(t, 1, res.Body["revision"], "an unchanged popup is not written")
	log := apitest.Entries(t, api.AdminDo(t, http.MethodGet, "/admin/v1/audit?popup_id="+apitest.Itoa(changed)+"&limit=1", nil))
	assert.Equal(t, "import", log[0]["action"])
	assert.Equal(t, "admin", log[0]["actor"])
	assert.EqualValues(t, 0, log[0]["before"].(map[string]any)["priority"])

	again := api.AdminDo(t, http.MethodPost, "/admin/v1/import", body)
	assert.Equal(t, map[string]any{"created": 0.0, "updated": 0.0, "unchanged": 4.0, "dry_run": false}, again.Body)
	assert.Equal(t, version+1, readyVersion(t, api), "an import that changes nothing bumps nothing")
}

func TestImportErrorsNameThePopupAndTheField(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, nil)
	db := apitest.DB(t, cfg)
	body := map[string]any{"popups": []any{
		apitest.PopupSpec("fine", nil),
		apitest.PopupSpec("bad-platform", map[string]any{"targeting": map[string]any{"platforms": []string{"symbian"}}}),
		apitest.PopupSpec("fine", nil),
		apitest.PopupSpec("typo", map[string]any{"priorty": 3}),
		apitest.PopupSpec("gone", map[string]any{"status": "archived"}),
		"not an object",
	}}
	res := api.AdminDo(t, http.MethodPost, "/admin/v1/import", body)
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	e := res.Body["error"].(map[string]any)
	assert.Equal(t, "validation_failed", e["code"])
	var fields []string
	for _, f := range e["fields"].([]any) {
		fm := f.(map[string]any)
		fields = append(fields, fm["field"].(string))
		assert.True(t, strings.HasPrefix(fm["message"].(string), "popup "), fm["message"])
	}
	assert.Equal(t, []string{"popups[1].targeting.platforms[0]", "popups[2].name", "popups[3].priorty", "popups[4].status", "popups[5]"}, fields)
	assert.Contains(t, res.Raw, `popup 1 (\"bad-platform\")`)
	assert.Equal(t, 0, countRows(t, db, "popup_config"), "nothing written")

	for _, raw := range []string{`{}`, `{"popups": {}}`, `{"popups": [], "extra": 1}`, `[]`, `nope`} {
		res := api.AdminDo(t, http.MethodPost, "/admin/v1/import", raw)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", raw, res.Raw)
	}
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/import?dry_run=perhaps", map[string]any{"popups": []any{}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Raw, `"field":"dry_run"`)
}

// TestBulkImportPropagates imports popups in bulk through the admin API (1,000; set
// POPUP_IMPORT_POPUPS=10000 for the figure of docs/PERFORMANCE.md) and checks the version bump,
// idempotence and that another running instance serves them. Timings are logged (go test -v).
func TestBulkImportPropagates(t *testing.T) {
	t.Parallel()
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("POPUP_IMPORT_POPUPS")); err == nil && v > 0 {
		n = v
	}
	cfg := apitest.Config(t)
	cfg.ConfigPoll = 10 * time.Second // pub/sub must do it
	a := apitest.Start(t, cfg, nil)
	b := apitest.Start(t, cfg, nil)
	ps := make([]any, n)
	for i := range ps {
		ps[i] = map[string]any{"name": fmt.Sprintf("bulk-%05d", i), "priority": i, "title": fmt.Sprintf("Bulk %d", i),
			"content": "An imported popup with a realistic amount of text in it.", "link_url": fmt.Sprintf("https://example.com/bulk/%d", i),
			"targeting": map[string]any{"platforms": []string{"ios", "android", "web"}, "rollout_percent": 100}}
	}
	body := map[string]any{"popups": ps}
	version := readyVersion(t, b)

	a.Client.Timeout = 2 * time.Minute
	began := time.Now()
	res := a.AdminDo(t, http.MethodPost, "/admin/v1/import", body)
	took := time.Since(began)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, map[string]any{"created": float64(n), "updated": 0.0, "unchanged": 0.0, "dry_run": false}, res.Body)

	// Instance b serves the top-priority one.
	var served time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, got := b.Get(t, "uid=bulk-user&platform=web&app_version=1")
		if p, ok := got.Body["popup"].(map[string]any); ok && p["title"] == fmt.Sprintf("Bulk %d", n-1) {
			served = time.Since(began)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NotZero(t, served, "instance b serves the imported popups")
	assert.Equal(t, version+1, readyVersion(t, b), "one config version bump")
	t.Logf("import of %d popups answered in %s; instance b served them %s after the request began", n, took, served)

	began = time.Now()
	res = a.AdminDo(t, http.MethodPost, "/admin/v1/import", body)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, map[string]any{"created": 0.0, "updated": 0.0, "unchanged": float64(n), "dry_run": false}, res.Body)
	t.Logf("identical second import answered in %s", time.Since(began))
	assert.Equal(t, version+1, readyVersion(t, b))

	res = a.AdminDo(t, http.MethodGet, "/admin/v1/popups?limit=500", nil)
	assert.Len(t, res.Body["popups"], 500)
	assert.NotNil(t, res.Body["next"])
}
