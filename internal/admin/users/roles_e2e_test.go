package users_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Operator roles through the admin HTTP API against the real MariaDB and Redis
// (docs/CONTRACT.md §9): what each role may write, that a refusal writes nothing, /me, and the
// role in the audit log and the history.

func TestEachRoleWritesWhatItMayAndARefusalWritesNothing(t *testing.T) {
	t.Parallel()
	api, cfg := apitest.StartWithRoles(t)
	db := apitest.DB(t, cfg)
	counts := func() apitest.WriteCounts { return apitest.PopupWriteCounts(t, db) }

	// request is one kind of write; draft and live are popups made for it by the admin.
	type request struct {
		method, path string
		body         any
	}
	kinds := []struct {
		kind string
		req  func(name string, draft, live int64) request
	}{
		{"create a draft", func(name string, _, _ int64) request {
			return request{http.MethodPost, "/admin/v1/popups", apitest.PopupSpec(name+"-new", map[string]any{"status": "draft"})}
		}},
		{"create an active popup", func(name string, _, _ int64) request {
			return request{http.MethodPost, "/admin/v1/popups", apitest.PopupSpec(name+"-new", nil)}
		}},
		{"edit a draft", func(name string, draft, _ int64) request {
			return request{http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(draft), apitest.PopupSpec(name+"-draft", map[string]any{"status": "draft", "priority": 7})}
		}},
		{"publish a draft", func(name string, draft, _ int64) request {
			return request{http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(draft), apitest.PopupSpec(name+"-draft", map[string]any{"status": "active"})}
		}},
		{"edit a live popup", func(name string, _, live int64) request {
			return request{http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(live), apitest.PopupSpec(name+"-live", map[string]any{"priority": 7})}
		}},
		{"unpublish a live popup", func(name string, _, live int64) request {
			return request{http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(live), apitest.PopupSpec(name+"-live", map[string]any{"status": "draft"})}
		}},
		{"archive a draft", func(_ string, draft, _ int64) request {
			return request{http.MethodDelete, "/admin/v1/popups/" + apitest.Itoa(draft), nil}
		}},
		// The two saves that change nothing (the popup as created) write nothing when allowed,
		// and are refused all the same to a role that may not make them: the role check comes
		// before the no-op shortcut. The rollback below, to the revision the popup is at, is one
		// too.
		{"save a draft unchanged", func(name string, draft, _ int64) request {
			return request{http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(draft), apitest.PopupSpec(name+"-draft", map[string]any{"status": "draft"})}
		}},
		{"save a live popup unchanged", func(name string, _, live int64) request {
			return request{http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(live), apitest.PopupSpec(name+"-live", nil)}
		}},
		{"roll back", func(_ string, _, live int64) request {
			return request{http.MethodPost, "/admin/v1/popups/" + apitest.Itoa(live) + "/rollback", map[string]any{"revision": 1}}
		}},
		{"import", func(name string, _, _ int64) request {
			return request{http.MethodPost, "/admin/v1/import", map[string]any{"popups": []any{apitest.PopupSpec(name+"-imported", nil)}}}
		}},
		{"dry-run import", func(name string, _, _ int64) request {
			return request{http.MethodPost, "/admin/v1/import?dry_run=true", map[string]any{"popups": []any{apitest.PopupSpec(name+"-imported", nil)}}}
		}},
		{"reload the cache", func(string, int64, int64) request { return request{http.MethodPost, "/admin/v1/cache/reload", nil} }},
		{"list operators", func(string, int64, int64) request { return request{http.MethodGet, "/admin/v1/operators", nil} }},
	}
	// want is each role's answer to each kind, in the order of kinds: a status, or the role a 403
	// names as needed.
	const ok, created = "200", "201"
	want := map[string][]string{
		"viewer":    {"editor", "editor", "editor", "editor", "editor", "editor", "publisher", "editor", "editor", "publisher", "editor", "editor", "admin", "admin"},
		"editor":    {created, "publisher", ok, "publisher", "publisher", "publisher", "publisher", ok, "publisher", "publisher", "publisher", ok, "admin", "admin"},
		"publisher": {created, created, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, "admin", "admin"},
		"admin":     {created, created, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok},
		"old":       {created, created, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok},
	}
	names := map[string]string{"viewer": "vera", "editor": "ed", "publisher": "pat", "admin": "admin", "old": "old"}
	article := map[string]string{"viewer": "a viewer", "editor": "an editor", "publisher": "a publisher"}

	for _, role := range []string{"viewer", "editor", "publisher", "admin", "old"} {
		for i, k := range kinds {
			t.Run(role+" "+k.kind, func(t *testing.T) {
				name := strings.ReplaceAll(role+" "+k.kind, " ", "-") // popupSpec's link_url ends with it
				draft := api.CreatePopup(t, apitest.PopupSpec(name+"-draft", map[string]any{"status": "draft"}))
				live := api.CreatePopup(t, apitest.PopupSpec(name+"-live", nil))
				req := k.req(name, draft, live)
				before := counts()
				draftBefore := api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(draft), nil)
				liveBefore := api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(live), nil)

				res := api.As(t, apitest.RoleTokens[role], req.method, req.path, req.body, nil)

				if w := want[role][i]; w == ok || w == created {
					require.Equal(t, w, strconv.Itoa(res.Status), res.Raw)
					return
				}
				require.Equal(t, http.StatusForbidden, res.Status, res.Raw)
				e := res.Body["error"].(map[string]any)
				assert.Equal(t, "forbidden", e["code"])
				assert.Equal(t, want[role][i], e["role_needed"])
				assert.Regexp(t, regexp.MustCompile(`^[a-z].* needs the `+want[role][i]+` role; `+names[role]+` is `+article[role]+`$`), e["message"])
				assert.Equal(t, before, counts(), "a refused write writes nothing: no popup, no revision, no audit entry")
				assert.Equal(t, draftBefore.Raw, api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(draft), nil).Raw)
				assert.Equal(t, liveBefore.Raw, api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(live), nil).Raw)
			})
		}
	}

	t.Run("pprof is the admin's", func(t *testing.T) {
		for role, want := range map[string]int{"viewer": 403, "editor": 403, "publisher": 403, "admin": 200, "old": 200} {
			status, _ := api.RawGet(t, apitest.RoleTokens[role], "/debug/pprof/")
			assert.Equal(t, want, status, role)
		}
	})

	t.Run("refusals are counted by the role needed", func(t *testing.T) {
		status, metrics := api.RawGet(t, apitest.RoleTokens["viewer"], "/metrics")
		require.Equal(t, http.StatusOK, status, "every operator reads /metrics")
		// From the table: the viewer's 10 editor + 2 publisher + 2 admin, the editor's 8
		// publisher + 2 admin, the publisher's 2 admin; then pprof: 3 admin.
		got := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^popup_admin_forbidden_total\{role_needed="(\w+)"\} (\d+)$`).FindAllStringSubmatch(metrics, -1) {
			got[m[1]] = m[2]
		}
		assert.Equal(t, map[string]string{"editor": "10", "publisher": "10", "admin": "9"}, got)
	})
}

func TestMeSaysWhatTheRoleMayDo(t *testing.T) {
	t.Parallel()
	api, _ := apitest.StartWithRoles(t)
	tests := []struct {
		role, wantName, wantRole string
		wantCan                  map[string]any
	}{
		{"viewer", "vera", "viewer", map[string]any{"edit_drafts": false, "publish": false, "admin": false}},
		{"editor", "ed", "editor", map[string]any{"edit_drafts": true, "publish": false, "admin": false}},
		{"publisher", "pat", "publisher", map[string]any{"edit_drafts": true, "publish": true, "admin": false}},
		{"admin", "admin", "admin", map[string]any{"edit_drafts": true, "publish": true, "admin": true}},
		{"old", "old", "admin", map[string]any{"edit_drafts": true, "publish": true, "admin": true}}, // declared without a role
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			res := api.As(t, apitest.RoleTokens[tt.role], http.MethodGet, "/admin/v1/me", nil, nil)
			require.Equal(t, http.StatusOK, res.Status, res.Raw)
			assert.Equal(t, map[string]any{"operator": tt.wantName, "role": tt.wantRole, "can": tt.wantCan}, res.Body)
		})
	}

	res := api.As(t, apitest.Token, http.MethodGet, "/admin/v1/operators", nil, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.JSONEq(t, `{"operators":[{"name":"admin","role":"admin"},{"name":"ed","role":"editor"},{"name":"old","role":"admin"},
		{"name":"pat","role":"publisher"},{"name":"vera","role":"viewer"}]}`, res.Raw, "names and roles, by name; never a token")
}

func TestAViewerReadsEverything(t *testing.T) {
	t.Parallel()
	api, _ := apitest.StartWithRoles(t)
	id := apitest.Itoa(api.CreatePopup(t, apitest.PopupSpec("read-me", nil)))
	api.WaitServed(t, id)
	const viewer = "tok-viewer"
	for _, path := range []string{"/admin/v1/popups", "/admin/v1/popups/" + id, "/admin/v1/popups/" + id + "/history",
		"/admin/v1/popups/" + id + "/stats", "/admin/v1/stats", "/admin/v1/audit", "/admin/v1/export", "/admin/v1/users/u1/state",
		"/admin/v1/preview?uid=u1&platform=ios&app_version=8.10.0", "/admin/v1/me"} {
		res := api.As(t, viewer, http.MethodGet, path, nil, nil)
		assert.Equal(t, http.StatusOK, res.Status, "%s: %s", path, res.Raw)
	}
	res := api.As(t, viewer, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": "u1", "platform": "ios", "app_version": "8.10.0",
		"popup": apitest.PopupSpec("a-draft-to-preview", nil)}, nil)
	assert.Equal(t, http.StatusOK, res.Status, "a draft preview records nothing: a read; %s", res.Raw)
	status, _ := api.RawGet(t, viewer, "/metrics")
	assert.Equal(t, http.StatusOK, status)
}

func TestTheAuditLogAndTheHistoryRecordTheRole(t *testing.T) {
	t.Parallel()
	api, _ := apitest.StartWithRoles(t)
	res := api.As(t, "tok-editor", http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("roles-audited", map[string]any{"status": "draft"}), nil)
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := apitest.Itoa(int64(res.Body["id"].(float64)))
	res = api.As(t, "tok-editor", http.MethodPut, "/admin/v1/popups/"+id, apitest.PopupSpec("roles-audited", map[string]any{"status": "draft", "priority": 3}), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.As(t, "tok-publisher", http.MethodPut, "/admin/v1/popups/"+id, apitest.PopupSpec("roles-audited", map[string]any{"status": "active"}), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.As(t, "tok-old", http.MethodDelete, "/admin/v1/popups/"+id, nil, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.As(t, "tok-editor", http.MethodPost, "/admin/v1/popups/"+id+"/rollback", map[string]any{"revision": 1}, nil)
	require.Equal(t, http.StatusForbidden, res.Status, res.Raw)

	type row struct{ actor, role, action string }
	var got []row
	for _, e := range apitest.Entries(t, api.As(t, "tok-viewer", http.MethodGet, "/admin/v1/audit?popup_id="+id, nil, nil)) {
		got = append(got, row{e["actor"].(string), e["role"].(string), e["action"].(string)})
	}
	assert.Equal(t, []row{{"old", "admin", "archive"}, {"pat", "publisher", "update"}, {"ed", "editor", "update"}, {"ed", "editor", "create"}}, got,
		"newest first, each with its actor's role; the refused rollback is not there")

	res = api.As(t, "tok-viewer", http.MethodGet, "/admin/v1/popups/"+id+"/history", nil, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var roles []string
	for _, r := range res.Body["revisions"].([]any) {
		roles = append(roles, r.(map[string]any)["role"].(string))
	}
	assert.Equal(t, []string{"admin", "publisher", "editor", "editor"}, roles)
}
