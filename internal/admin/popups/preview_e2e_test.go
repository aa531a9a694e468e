package popups_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

func TestDraftPreviewAsIfTheDraftWereActive(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Config(t), nil)
	live := api.CreatePopup(t, apitest.PopupSpec("live", map[string]any{"priority": 10}))
	draftOnly := api.CreatePopup(t, apitest.PopupSpec("shelved", map[string]any{"status": "draft", "priority": 50}))
	preview := func(p map[string]any) apitest.Response {
		return api.AdminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": "dp", "platform": "ios", "app_version": "8.1", "popup": p})
	}

	// A new draft that outranks the live popup is what the user would get.
	res := preview(apitest.PopupSpec("new idea", map[string]any{"priority": 20, "title": "Draft title", "link_url": "https://example.com/d"}))
	assert.Equal(t, map[int64]string{0: "", live: "lower_priority"}, apitest.ReasonsOf(t, res), "the draft (id 0) alongside the live popups")
	shown := res.Body["popup"].(map[string]any)
	assert.Equal(t, "Draft title", shown["title"])
	assert.EqualValues(t, 0, shown["id"])
	assert.NotNil(t, res.Body["config_version"])

	// A draft that targets another platform: the live popup wins and the draft says why not.
	res = preview(apitest.PopupSpec("android only", map[string]any{"priority": 20, "link_url": "https://example.com/a", "targeting": map[string]any{"platforms": []string{"android"}}}))
	assert.Equal(t, map[int64]string{0: "platform", live: ""}, apitest.ReasonsOf(t, res))
	assert.EqualValues(t, live, res.Body["popup"].(map[string]any)["id"])

	// The draft of an edit replaces the saved popup of its id, even one that is not active.
	res = preview(apitest.PopupSpec("shelved", map[string]any{"id": draftOnly, "priority": 50, "title": "Edited"}))
	assert.Equal(t, map[int64]string{draftOnly: "", live: "lower_priority"}, apitest.ReasonsOf(t, res))
	assert.Equal(t, "Edited", res.Body["popup"].(map[string]any)["title"])
	assert.EqualValues(t, draftOnly, res.Body["popup"].(map[string]any)["id"])

	// Nothing was recorded and nothing changed: the homepage still gets the live popup.
	res = api.AdminDo(t, http.MethodGet, "/admin/v1/users/dp/state", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Empty(t, res.Body["popups"])
	got, _ := api.Get(t, "uid=dp&platform=ios&app_version=8.1")
	assert.Equal(t, live, got)

	for _, tt := range []struct {
		name  string
		body  any
		field string
		code  string
	}{
		{"bad platform in the draft", map[string]any{"uid": "dp", "platform": "ios", "app_version": "8.1",
			"popup": map[string]any{"name": "x", "targeting": map[string]any{"platforms": []string{"symbian"}}}}, "popup.targeting.platforms[0]", "validation_failed"},
		{"unknown draft field", map[string]any{"uid": "dp", "platform": "ios", "app_version": "8.1", "popup": map[string]any{"name": "x", "colour": 1}}, "popup.colour", "invalid_json"},
		{"no draft", map[string]any{"uid": "dp", "platform": "ios", "app_version": "8.1"}, "popup", "validation_failed"},
		{"draft id 0", map[string]any{"uid": "dp", "platform": "ios", "app_version": "8.1", "popup": map[string]any{"name": "x", "id": 0}}, "popup.id", "validation_failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := api.AdminDo(t, http.MethodPost, "/admin/v1/preview", tt.body)
			require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
			e := res.Body["error"].(map[string]any)
			assert.Equal(t, tt.code, e["code"])
			assert.Equal(t, tt.field, e["fields"].([]any)[0].(map[string]any)["field"])
		})
	}
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": "bad uid", "platform": "ios", "app_version": "8.1", "popup": map[string]any{"name": "x"}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": "dp", "platform": "ios", "app_version": "8.1", "popup": map[string]any{"name": "x"}, "extra": 1})
	assert.Equal(t, http.StatusBadRequest, res.Status)
}
