package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// errorOf returns the error code and the first named field of an error answer.
func errorOf(t *testing.T, res response) (code, field string) {
	t.Helper()
	return apitest.ErrorOf(t, res)
}

func (in *instance) adminDoHeader(t *testing.T, method, path string, body any, header map[string]string) response {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token}
	for k, v := range header {
		h[k] = v
	}
	return in.do(t, method, "http://"+in.admin+path, body, h)
}

func TestAdminGetAnswerPutsBackAsItIs(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("round-trip", map[string]any{"priority": 5}))
	path := "/admin/v1/popups/" + itoa(id)

	got := api.adminDo(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, got.Status, got.Raw)
	for _, k := range []string{"id", "revision", "created_at", "updated_at"} {
		assert.Contains(t, got.Body, k)
	}
	edited := got.Body
	edited["priority"] = 9
	put := api.adminDo(t, http.MethodPut, path, edited)
	require.Equal(t, http.StatusOK, put.Status, put.Raw)
	assert.EqualValues(t, 9, put.Body["priority"])
	assert.EqualValues(t, 2, put.Body["revision"])

	edited["id"] = id + 1
	res := api.adminDo(t, http.MethodPut, path, edited)
	assert.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	code, field := errorOf(t, res)
	assert.Equal(t, "validation_failed", code)
	assert.Equal(t, "id", field, "an id other than the path's is refused")
	edited["id"] = id

	edited["name"] = "copy of " + edited["name"].(string) // live names are unique
	copied := api.adminDo(t, http.MethodPost, "/admin/v1/popups", edited)
	require.Equal(t, http.StatusCreated, copied.Status, "a POST ignores the server-managed fields: %s", copied.Raw)
	assert.NotEqualValues(t, id, copied.Body["id"])
	assert.EqualValues(t, 1, copied.Body["revision"])
	assert.Equal(t, `"1"`, copied.Header.Get("ETag"))

	delete(edited, "id")
	edited["colour"] = "red"
	res = api.adminDo(t, http.MethodPut, path, edited)
	assert.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	code, field = errorOf(t, res)
	assert.Equal(t, "invalid_json", code)
	assert.Equal(t, "colour", field, "any other unknown field is still refused")
}

func TestAdminIfMatchRefusesAStaleWrite(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("etag", nil))
	path := "/admin/v1/popups/" + itoa(id)

	// Two operators read the popup at the same revision.
	alice := api.adminDo(t, http.MethodGet, path, nil)
	bob := api.adminDo(t, http.MethodGet, path, nil)
	require.Equal(t, `"1"`, alice.Header.Get("ETag"))
	require.EqualValues(t, 1, alice.Body["revision"])

	alice.Body["title"] = "alice's title"
	res := api.adminDoHeader(t, http.MethodPut, path, alice.Body, map[string]string{"If-Match": alice.Header.Get("ETag")})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, `"2"`, res.Header.Get("ETag"))
	assert.EqualValues(t, 2, res.Body["revision"])

	bob.Body["title"] = "bob's title"
	res = api.adminDoHeader(t, http.MethodPut, path, bob.Body, map[string]string{"If-Match": bob.Header.Get("ETag")})
	assert.Equal(t, http.StatusPreconditionFailed, res.Status, res.Raw)
	code, _ := errorOf(t, res)
	assert.Equal(t, "precondition_failed", code)
	res = api.adminDoHeader(t, http.MethodDelete, path, nil, map[string]string{"If-Match": bob.Header.Get("ETag")})
	assert.Equal(t, http.StatusPreconditionFailed, res.Status, res.Raw)

	now := api.adminDo(t, http.MethodGet, path, nil)
	assert.Equal(t, "alice's title", now.Body["title"], "bob did not silently overwrite alice")
	assert.Equal(t, `"2"`, now.Header.Get("ETag"))
	assert.Equal(t, "active", now.Body["status"])

	now.Body["title"] = "third"
	res = api.adminDoHeader(t, http.MethodPut, path, now.Body, map[string]string{"If-Match": "*"})
	require.Equal(t, http.StatusOK, res.Status, "If-Match: * means no check")
	now.Body["title"] = "fourth"
	res = api.adminDo(t, http.MethodPut, path, now.Body)
	require.Equal(t, http.StatusOK, res.Status, "nor does no If-Match")
	res = api.adminDoHeader(t, http.MethodDelete, path, nil, map[string]string{"If-Match": res.Header.Get("ETag")})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "archived", res.Body["status"])
	assert.Equal(t, `"5"`, res.Header.Get("ETag"))

	delete(now.Body, "id")
	res = api.adminDoHeader(t, http.MethodPut, "/admin/v1/popups/999999", now.Body, map[string]string{"If-Match": `"1"`})
	assert.Equal(t, http.StatusNotFound, res.Status, "a missing popup is 404 whatever If-Match says")
}

func TestAdminConcurrentEditsOfOneRevisionLetOneWin(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("race", nil))
	path := "/admin/v1/popups/" + itoa(id)
	read := api.adminDo(t, http.MethodGet, path, nil)

	const editors = 6
	statuses := make([]int, editors)
	var wg sync.WaitGroup
	for i := range editors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := map[string]any{"name": "race", "title": "editor " + itoa(int64(i))}
			statuses[i] = api.adminDoHeader(t, http.MethodPut, path, body, map[string]string{"If-Match": read.Header.Get("ETag")}).Status
		}()
	}
	wg.Wait()

	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 1, http.StatusPreconditionFailed: editors - 1}, count)
	assert.Equal(t, `"2"`, api.adminDo(t, http.MethodGet, path, nil).Header.Get("ETag"))
}

func TestAdminHostileBodiesAre400sNamingTheField(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("target", nil))
	deep := strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000)
	const shape, rule = "invalid_json", "validation_failed"
	tests := []struct {
		name      string
		give      string
		wantField string
		wantCode  string
	}{
		{"unknown field", `{"name":"x","colour":"red"}`, "colour", shape},
		{"start_at yesterday", `{"name":"x","start_at":"yesterday"}`, "start_at", shape},
		{"priority as a string", `{"name":"x","priority":"x"}`, "priority", shape},
		{"unknown targeting field", `{"name":"x","targeting":{"platform":"ios"}}`, "targeting.platform", shape},
		{"priority beyond INT", `{"name":"x","priority":2147483648}`, "priority", rule},
		{"max_impressions beyond INT", `{"name":"x","max_impressions":2147483648}`, "max_impressions", rule},
		{"reshow beyond 10 years", `{"name":"x","reshow_after_seconds":9223372036854775807}`, "reshow_after_seconds", rule},
		{"start_at in year 0", `{"name":"x","start_at":"0000-01-01T00:00:00Z"}`, "start_at", rule},
		{"end_at in year 10000 once in UTC", `{"name":"x","end_at":"9999-12-31T23:59:59-01:00"}`, "end_at", rule},
		{"javascript link", `{"name":"x","link_url":"javascript://%0aalert(1)"}`, "link_url", rule},
		{"javascript button", `{"name":"x","buttons":[{"text":"Go","link_url":"javascript://%0aalert(1)"}]}`, "buttons[0].link_url", rule},
		{"file link", `{"name":"x","link_url":"file:///etc/passwd"}`, "link_url", rule},
		{"data link", `{"name":"x","link_url":"data://text/html,x"}`, "link_url", rule},
		{"vbscript link", `{"name":"x","link_url":"vbscript://x"}`, "link_url", rule},
		{"intent link", `{"name":"x","link_url":"intent://x#Intent;end"}`, "link_url", rule},
		{"app-scheme image", `{"name":"x","image_url":"app://img.png"}`, "image_url", rule},
		{"ext 9,000 levels deep", `{"name":"x","ext":` + deep + `}`, "ext", rule},
		{"ext not an object", `{"name":"x","ext":[1]}`, "ext", rule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, write := range []struct{ method, path string }{
				{http.MethodPost, "/admin/v1/popups"},
				{http.MethodPut, "/admin/v1/popups/" + itoa(id)},
			} {
				res := api.adminDo(t, write.method, write.path, tt.give)

				assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", write.method, res.Raw)
				code, field := errorOf(t, res)
				assert.Equal(t, tt.wantCode, code, write.method)
				assert.Equal(t, tt.wantField, field, write.method)
			}
		})
	}
	res := api.adminDo(t, http.MethodPost, "/admin/v1/popups", `{"name":"deep link","link_url":"app://home"}`)
	assert.Equal(t, http.StatusCreated, res.Status, "a configured app scheme is a link like https: %s", res.Raw)
}

func TestListIncludeArchivedFlag(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("archived", nil))
	require.Equal(t, http.StatusOK, api.adminDo(t, http.MethodDelete, "/admin/v1/popups/"+itoa(id), nil).Status)
	tests := []struct {
		give string
		want int // popups listed
	}{
		{give: "", want: 0}, {give: "?include_archived=false", want: 0}, {give: "?include_archived=NO", want: 0},
		{give: "?include_archived=0", want: 0}, {give: "?include_archived=true", want: 1},
		{give: "?include_archived=True", want: 1}, {give: "?include_archived=1", want: 1}, {give: "?include_archived=yes", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			res := api.adminDo(t, http.MethodGet, "/admin/v1/popups"+tt.give, nil)
			require.Equal(t, http.StatusOK, res.Status, res.Raw)
			assert.Len(t, res.Body["popups"], tt.want)
		})
	}
	res := api.adminDo(t, http.MethodGet, "/admin/v1/popups?include_archived=maybe", nil)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	_, field := errorOf(t, res)
	assert.Equal(t, "include_archived", field)
}

// TestClicksFollowTheLifecycle pins the rule for actions on popups that are not shown: archived
// is deleted for the public API (404); draft and paused popups still exist (202), since a paused
// popup may have been shown before it was paused and its click still counts.
func TestClicksFollowTheLifecycle(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	api := start(t, apitest.RelaxedConfig(t), nil)
	tests := []struct {
		status string
		want   int
	}{
		{"active", http.StatusAccepted},
		{"draft", http.StatusAccepted},
		{"paused", http.StatusAccepted},
		{"archived", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			id := api.createPopup(t, popupSpec("lifecycle-"+tt.status, map[string]any{"status": tt.status}))

			res := api.action(t, id, map[string]any{"uid": "clicker", "action": "click"})

			assert.Equal(t, tt.want, res.Status, res.Raw)
		})
	}
}

func TestOneEventIDOfTwoUsersCountsForBoth(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg, api, db := startWithWorker(t)
	ctx := context.Background()
	// Only a click hides it: seeing it does not.
	id := api.createPopup(t, popupSpec("shared-event-id", map[string]any{"reshow_after_seconds": 0, "click_cooldown_seconds": 3600}))
	users := []string{"user-a", "user-b"}
	for _, uid := range users {
		got, _ := api.get(t, "uid="+uid+"&platform=ios&app_version=1")
		require.Equal(t, id, got, "%s sees the popup before clicking", uid)
	}

	for _, uid := range users {
		res := api.action(t, id, map[string]any{"uid": uid, "action": "click", "event_id": "shared-evt-1"})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	}

	for _, uid := range users {
		got, _ := api.get(t, "uid="+uid+"&platform=ios&app_version=1")
		assert.Zero(t, got, "%s clicked: the popup is hidden", uid)
		state := api.adminDo(t, http.MethodGet, "/admin/v1/users/"+uid+"/state", nil)
		require.Equal(t, http.StatusOK, state.Status, state.Raw)
		popups, _ := state.Body["popups"].([]any)
		require.Len(t, popups, 1, state.Raw)
		assert.NotNil(t, popups[0].(map[string]any)["last_click_at"], "%s's state shows the click", uid)
	}
	var logged []string
	require.Eventually(t, func() bool {
		logged = nil
		rows, err := db.QueryContext(ctx, `SELECT uid FROM popup_action_log WHERE event_id = 'shared-evt-1' AND action = 'click' ORDER BY uid`)
		if err != nil {
			return false
		}
		defer rows.Close()
		for rows.Next() {
			var uid string
			if rows.Scan(&uid) == nil {
				logged = append(logged, uid)
			}
		}
		return len(logged) == 2
	}, 10*time.Second, 50*time.Millisecond, "both clicks reach popup_action_log")
	assert.Equal(t, users, logged)

	// A retry of either is still applied once.
	res := api.action(t, id, map[string]any{"uid": "user-a", "action": "click", "event_id": "shared-evt-1"})
	require.Equal(t, http.StatusAccepted, res.Status)
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	marked, err := redisstore.ActionRemembered(ctx, rdb, keys, nil, "user-a", "shared-evt-1", time.Now())
	require.NoError(t, err)
	assert.True(t, marked, "user-a's event id is remembered")
	// A later event of the same user goes to the same shard's queue, behind any wrongly queued
	// replay: once it is logged, the worker has passed where the replay would be.
	res = api.action(t, id, map[string]any{"uid": "user-a", "action": "click", "event_id": "after-the-retry"})
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	require.Eventually(t, func() bool {
		var n int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE event_id = 'after-the-retry'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond, "the later event reaches popup_action_log")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE event_id = 'shared-evt-1'`).Scan(&n))
	assert.Equal(t, 2, n)
}
