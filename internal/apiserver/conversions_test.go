package apiserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestABatchRefusesOnlyTheConversionsOfARateLimitedUID: a uid over POPUP_ACTION_RATE_LIMIT
// refuses its own conversions of a batch, named by index in a 429 with Retry-After; every other
// conversion of the batch is queued and written (docs/CONTRACT.md §14).
func TestABatchRefusesOnlyTheConversionsOfARateLimitedUID(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ActionRateLimit = 2
	api := start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	db := apitest.DB(t, cfg)
	res := api.adminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "signup", "name": "Sign-up"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	eventually(t, 10*time.Second, "the goal is accepted", func() bool {
		return api.Conversion(t, map[string]any{"uid": "probe", "goal": "signup", "event_id": "probe"}).Status == http.StatusAccepted
	})
	var batch []map[string]any
	for i, uid := range []string{"hot", "cold-1", "hot", "hot", "cold-2", "hot"} {
		batch = append(batch, map[string]any{"uid": uid, "goal": "signup", "event_id": "e" + itoa(int64(i))})
	}
	res = api.do(t, http.MethodPost, "http://"+api.public+"/api/v1/conversions/batch", map[string]any{"conversions": batch}, nil)
	require.Equal(t, http.StatusTooManyRequests, res.Status, res.Raw)
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	code, _ := errorOf(t, res)
	assert.Equal(t, "rate_limited", code)
	var fields []string
	list, _ := res.Body["error"].(map[string]any)["fields"].([]any)
	for _, f := range list {
		fields = append(fields, f.(map[string]any)["field"].(string))
	}
	assert.Equal(t, []string{"conversions[3].uid", "conversions[5].uid"}, fields, "the hot uid's conversions over its limit of 2, and only those")
	eventually(t, 15*time.Second, "the others are written", func() bool {
		return apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid LIKE 'cold-%'`) == 2 &&
			apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid = 'hot'`) == 2
	})
	assert.Equal(t, 2, apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid = 'hot' AND event_id IN ('e0', 'e2')`))
}
