package apiserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/testenv"
)

// TestActionRateLimitPerUID: POPUP_ACTION_RATE_LIMIT caps one uid's recorded clicks and closes
// per minute with a 429, and leaves other uids alone (docs/SECURITY.md).
func TestActionRateLimitPerUID(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	cfg.ActionRateLimit = 3
	api := start(t, cfg, nil)
	id := api.createPopup(t, popupSpec("limited", nil))
	click := func(uid string) response { return api.action(t, id, map[string]any{"uid": uid, "action": "click"}) }
	for i := 0; i < 3; i++ {
		require.Equal(t, http.StatusAccepted, click("hammer").Status)
	}
	res := click("hammer")
	require.Equal(t, http.StatusTooManyRequests, res.Status, res.Raw)
	assert.Equal(t, "rate_limited", res.Body["error"].(map[string]any)["code"])
	assert.Equal(t, "60", res.Header.Get("Retry-After"))
	assert.Equal(t, http.StatusAccepted, click("bystander").Status, "the limit is per uid")
}

// TestSQLMetacharactersAreData: free text reaches MySQL only as placeholder arguments, so SQL in
// a popup's fields is stored and read back verbatim and runs nowhere. (uids, event ids and
// decision ids cannot carry a quote at all: [A-Za-z0-9_.:-].)
func TestSQLMetacharactersAreData(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	api := start(t, cfg, nil)
	hostile := map[string]any{
		"name":    `x'); DROP TABLE popup_config; --`,
		"title":   `" OR "1"="1`,
		"content": `\'; UPDATE popup_config SET status='archived' WHERE 1=1; -- %_`,
		"targeting": map[string]any{"uids": []string{"qa-1"}, "rollout_percent": 100,
			"regions": []string{"cn"}},
	}
	id := api.createPopup(t, popupSpec("ignored", hostile))
	other := api.createPopup(t, popupSpec("bystander", nil))
	res := api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	for _, field := range []string{"name", "title", "content"} {
		assert.Equal(t, hostile[field], res.Body[field], field)
	}
	res = api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(other), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "active", res.Body["status"], "the other popup is untouched")

	db, err := mysqlstore.Open(context.Background(), cfg.MySQLDSN, 1)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM popup_config").Scan(&n))
	assert.Equal(t, 2, n, "popup_config is still there with both rows")
}
