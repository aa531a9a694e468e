package audit_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestTheAuditLogHoldsTheChangesOfEveryResource: an audience's writes, a goal's, the settings'
// and the holdout's phases are read back from GET /admin/v1/audit/changes?resource=, newest
// first, with who made them, paged with next; a settings write that changes nothing records
// nothing (docs/CONTRACT.md §9). Every answer is checked against api/openapi.yaml.
func TestTheAuditLogHoldsTheChangesOfEveryResource(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Config(t), nil)
	c := apitest.AdminClient{Spec: apitest.NewSpecChecker(t, api.Public, api.Admin), Base: "http://" + api.Admin}
	changes := func(query string) []map[string]any {
		t.Helper()
		got := c.Do(t, "GET", "/admin/v1/audit/changes?"+query, "", nil, http.StatusOK)
		var out []map[string]any
		for _, e := range got.Body["entries"].([]any) {
			out = append(out, e.(map[string]any))
		}
		return out
	}

	aud := c.Do(t, "POST", "/admin/v1/audiences", `{"name":"vips"}`, nil, http.StatusCreated)
	audID := aud.Body["id"].(float64)
	c.Do(t, "PUT", "/admin/v1/audiences/"+apitest.Itoa(int64(audID)), `{"name":"vips","description":"the best"}`, nil, http.StatusOK)
	got := changes("resource=audiences")
	require.Len(t, got, 2)
	assert.Equal(t, "update", got[0]["action"])
	assert.Equal(t, "create", got[1]["action"])
	assert.Equal(t, apitest.Itoa(int64(audID)), got[0]["subject"])
	assert.Equal(t, "admin", got[0]["actor"])
	assert.Equal(t, "admin", got[0]["role"])
	assert.Equal(t, 2.0, got[0]["version"])
	assert.Equal(t, 0.0, got[0]["size"])

	c.Do(t, "POST", "/admin/v1/goals", `{"key":"signup","name":"Signup"}`, nil, http.StatusCreated)
	got = changes("resource=goals")
	require.Len(t, got, 1)
	assert.Equal(t, "signup", got[0]["subject"])
	assert.Equal(t, "create", got[0]["action"])
	assert.Equal(t, 1.0, got[0]["version"])
	assert.Nil(t, got[0]["size"], "only an audience change has members")

	c.Do(t, "PUT", "/admin/v1/settings", `{"reporting_time_zone":"UTC","daily_cap":5}`, nil, http.StatusOK)
	c.Do(t, "PUT", "/admin/v1/settings", `{"reporting_time_zone":"UTC","daily_cap":5}`, nil, http.StatusOK)
	got = changes("resource=settings")
	bySetting := map[string]map[string]any{}
	for _, e := range got {
		require.NotContains(t, bySetting, e["subject"], "a write that changes nothing records nothing: %v", got)
		bySetting[e["subject"].(string)] = e
	}
	require.Contains(t, bySetting, "daily_cap")
	assert.Equal(t, "5", bySetting["daily_cap"]["after"])
	assert.Nil(t, bySetting["daily_cap"]["before"], "never set before")
	require.Contains(t, bySetting, "reporting_time_zone")
	assert.Equal(t, "UTC", bySetting["reporting_time_zone"]["after"])

	c.Do(t, "PUT", "/admin/v1/settings", `{"reporting_time_zone":"UTC","holdout_percent":10}`, nil, http.StatusOK)
	c.Do(t, "PUT", "/admin/v1/settings", `{"reporting_time_zone":"UTC","holdout_percent":5}`, nil, http.StatusOK)
	got = changes("resource=holdout")
	require.Len(t, got, 3, "phase 2's start, phase 1's end and start")
	assert.Equal(t, []any{"start", "end", "start"}, []any{got[0]["action"], got[1]["action"], got[2]["action"]})
	assert.Equal(t, []any{"2", "1", "1"}, []any{got[0]["subject"], got[1]["subject"], got[2]["subject"]})
	assert.Equal(t, "5", got[0]["after"])
	assert.Equal(t, "10", got[1]["before"])

	first := c.Do(t, "GET", "/admin/v1/audit/changes?resource=holdout&limit=2", "", nil, http.StatusOK)
	require.Len(t, first.Body["entries"], 2)
	next, ok := first.Body["next"].(string)
	require.True(t, ok, "a next page: %s", first.Raw)
	rest := changes("resource=holdout&before=" + next)
	require.Len(t, rest, 1)
	assert.Equal(t, "start", rest[0]["action"])
	assert.Equal(t, "1", rest[0]["subject"])
	assert.Empty(t, changes("resource=goals&actor=someone-else"))
}
