package popups_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Change control through the admin HTTP API against the real MariaDB and Redis: operators,
// audit log, history and rollback, list pages, export and import.

func countRows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	return apitest.Count(t, db, "SELECT COUNT(*) FROM "+table)
}

func TestOperatorsAreAttributedInTheAuditLog(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("# operators\ncarol:tok-carol\n"), 0o600))
	cfg.AdminTokens = []string{"alice:tok-alice", "bob:tok-bob"}
	cfg.AdminTokensFile = file
	api := apitest.Start(t, cfg, nil)

	res := api.As(t, "tok-alice", http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("attributed", nil), nil)
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	id := int64(res.Body["id"].(float64))
	res = api.As(t, "tok-bob", http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(id), apitest.PopupSpec("attributed", map[string]any{"priority": 5}),
		map[string]string{"If-Match": res.Header.Get("ETag")})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.As(t, "tok-carol", http.MethodDelete, "/admin/v1/popups/"+apitest.Itoa(id), nil, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.As(t, apitest.Token, http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("by admin", map[string]any{"link_url": "https://example.com/a"}), nil)
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)

	for _, tok := range []string{"tok-alic", "tok-alice2", "wrong", ""} {
		res = api.As(t, tok, http.MethodGet, "/admin/v1/audit", nil, nil)
		assert.Equal(t, http.StatusUnauthorized, res.Status, "token %q", tok)
	}

	all := apitest.Entries(t, api.AdminDo(t, http.MethodGet, "/admin/v1/audit", nil))
	require.Len(t, all, 4)
	type row struct {
		actor, action string
		revision      float64
	}
	var got []row
	for _, e := range all {
		got = append(got, row{e["actor"].(string), e["action"].(string), e["revision"].(float64)})
	}
	assert.Equal(t, []row{{"admin", "create", 1}, {"carol", "archive", 3}, {"bob", "update", 2}, {"alice", "create", 1}}, got, "newest first")
	create := all[3]
	assert.Nil(t, create["before"], "a create has no before")
	assert.Equal(t, "attributed", create["after"].(map[string]any)["name"])
	update := all[2]
	assert.Equal(t, float64(0), update["before"].(map[string]any)["priority"])
	assert.Equal(t, float64(5), update["after"].(map[string]any)["priority"])
	assert.Equal(t, float64(id), update["popup_id"])
	assert.NotEmpty(t, update["at"])

	bob := apitest.Entries(t, api.AdminDo(t, http.MethodGet, "/admin/v1/audit?actor=bob", nil))
	require.Len(t, bob, 1)
	assert.Equal(t, "update", bob[0]["action"])
	ofPopup := apitest.Entries(t, api.AdminDo(t, http.MethodGet, "/admin/v1/audit?popup_id="+apitest.Itoa(id), nil))
	assert.Len(t, ofPopup, 3)

	// Pages of one, following next.
	var ids []float64
	cursor := ""
	for page := 0; page < 10; page++ {
		res := api.AdminDo(t, http.MethodGet, "/admin/v1/audit?limit=1"+cursor, nil)
		es := apitest.Entries(t, res)
		for _, e := range es {
			ids = append(ids, e["id"].(float64))
		}
		next, ok := res.Body["next"].(string)
		if !ok {
			assert.Nil(t, res.Body["next"])
			break
		}
		cursor = "&before=" + next
	}
	require.Len(t, ids, 4)
	for i := 1; i < len(ids); i++ {
		assert.Less(t, ids[i], ids[i-1], "newest first, no entry twice")
	}

	for _, q := range []string{"limit=0", "limit=501", "limit=x", "before=-1", "popup_id=abc", "actor=no%20spaces"} {
		res := api.AdminDo(t, http.MethodGet, "/admin/v1/audit?"+q, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, q)
		fields := res.Body["error"].(map[string]any)["fields"].([]any)
		assert.Equal(t, q[:len(q)-len(q[indexOf(q, '='):])], fields[0].(map[string]any)["field"], q)
	}
}

func indexOf(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func TestAFailedWriteLeavesNoRevisionAndNoAuditEntry(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, nil)
	db := apitest.DB(t, cfg)
	api.CreatePopup(t, apitest.PopupSpec("taken", nil))
	res := api.AdminDo(t, http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("other", nil))
	require.Equal(t, http.StatusCreated, res.Status)
	other := int64(res.Body["id"].(float64))
	audits, revisions := countRows(t, db, "popup_audit"), countRows(t, db, "popup_revision")
	require.Equal(t, 2, audits)
	require.Equal(t, 2, revisions)

	tests := []struct {
		name       string
		method     string
		path       string
		body       any
		header     map[string]string
		wantStatus int
		wantCode   string
	}{
		{"create with a live name", http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("taken", nil), nil, http.StatusConflict, "name_taken"},
		{"rename onto a live name", http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(other), apitest.PopupSpec("taken", nil), nil, http.StatusConflict, "name_taken"},
		{"stale If-Match", http.MethodPut, "/admin/v1/popups/" + apitest.Itoa(other), apitest.PopupSpec("other", nil), map[string]string{"If-Match": `"7"`}, http.StatusPreconditionFailed, "precondition_failed"},
		{"stale archive", http.MethodDelete, "/admin/v1/popups/" + apitest.Itoa(other), nil, map[string]string{"If-Match": `"7"`}, http.StatusPreconditionFailed, "precondition_failed"},
		{"rollback to a revision never had", http.MethodPost, "/admin/v1/popups/" + apitest.Itoa(other) + "/rollback", map[string]any{"revision": 9}, nil, http.StatusNotFound, "revision_not_found"},
		{"unknown popup", http.MethodPut, "/admin/v1/popups/999999", apitest.PopupSpec("x", nil), nil, http.StatusNotFound, "popup_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := api.As(t, apitest.Token, tt.method, tt.path, tt.body, tt.header)
			require.Equal(t, tt.wantStatus, res.Status, res.Raw)
			assert.Equal(t, tt.wantCode, res.Body["error"].(map[string]any)["code"])
			assert.Equal(t, audits, countRows(t, db, "popup_audit"), "no audit entry")
			assert.Equal(t, revisions, countRows(t, db, "popup_revision"), "no revision")
		})
	}
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("taken", nil))
	fields := res.Body["error"].(map[string]any)["fields"].([]any)
	assert.Equal(t, "name", fields[0].(map[string]any)["field"])

	// An archived popup frees its name.
	res = api.AdminDo(t, http.MethodDelete, "/admin/v1/popups/"+apitest.Itoa(other), nil)
	require.Equal(t, http.StatusOK, res.Status)
	res = api.AdminDo(t, http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("other", nil))
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
}

func TestHistoryAndRollbackPropagate(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.ConfigPoll = 10 * time.Second // pub/sub must do it
	cfg.AdminTokens = []string{"alice:tok-alice"}
	a := apitest.Start(t, cfg, nil)
	b := apitest.Start(t, cfg, nil)
	const q = "uid=u1&platform=web&app_version=1"

	id := a.CreatePopup(t, apitest.PopupSpec("rolled", map[string]any{"title": "first", "reshow_after_seconds": 0}))
	res := a.As(t, "tok-alice", http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(id), apitest.PopupSpec("rolled", map[string]any{"title": "second", "reshow_after_seconds": 0}), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)

	res = a.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id)+"/history", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	revs := res.Body["revisions"].([]any)
	require.Len(t, revs, 2)
	newest, oldest := revs[0].(map[string]any), revs[1].(map[string]any)
	assert.Equal(t, float64(2), newest["revision"])
	assert.Equal(t, "alice", newest["actor"])
	assert.Equal(t, "second", newest["popup"].(map[string]any)["title"])
	assert.Equal(t, float64(1), oldest["revision"])
	assert.Equal(t, "admin", oldest["actor"])
	assert.Equal(t, "first", oldest["popup"].(map[string]any)["title"])
	assert.Equal(t, float64(id), oldest["popup"].(map[string]any)["id"])

	// A rollback honours If-Match like a PUT.
	res = a.As(t, "tok-alice", http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/rollback", map[string]any{"revision": 1}, map[string]string{"If-Match": `"1"`})
	require.Equal(t, http.StatusPreconditionFailed, res.Status, res.Raw)
	res = a.As(t, "tok-alice", http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/rollback", map[string]any{"revision": 1}, map[string]string{"If-Match": `"2"`})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	began := time.Now()
	assert.Equal(t, `"3"`, res.Header.Get("ETag"))
	assert.Equal(t, "first", res.Body["title"])
	assert.Equal(t, float64(3), res.Body["revision"])

	deadline := began.Add(2 * time.Second)
	title := ""
	for time.Now().Before(deadline) && title != "first" {
		_, got := b.Get(t, q)
		if p, ok := got.Body["popup"].(map[string]any); ok {
			title, _ = p["title"].(string)
		}
		if title != "first" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	assert.Equal(t, "first", title, "instance b serves the rolled-back content within 2 s")
	t.Logf("rollback propagated in %s", time.Since(began))

	log := apitest.Entries(t, a.AdminDo(t, http.MethodGet, "/admin/v1/audit?popup_id="+apitest.Itoa(id)+"&limit=1", nil))
	require.Len(t, log, 1)
	assert.Equal(t, "rollback", log[0]["action"])
	assert.Equal(t, "alice", log[0]["actor"])
	assert.Equal(t, "second", log[0]["before"].(map[string]any)["title"])
	assert.Equal(t, "first", log[0]["after"].(map[string]any)["title"])

	// Rolling back over an archive brings the popup back.
	res = a.AdminDo(t, http.MethodDelete, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status)
	res = a.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/rollback", map[string]any{"revision": 3})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "active", res.Body["status"])

	for _, body := range []any{map[string]any{}, map[string]any{"revision": 0}, map[string]any{"revision": "2"}, map[string]any{"revision": 1, "x": 1}, "[]"} {
		res = a.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/rollback", body)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%v: %s", body, res.Raw)
	}
	res = a.AdminDo(t, http.MethodGet, "/admin/v1/popups/999999/history", nil)
	assert.Equal(t, http.StatusNotFound, res.Status)
	res = a.AdminDo(t, http.MethodPost, "/admin/v1/popups/999999/rollback", map[string]any{"revision": 1})
	assert.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, "popup_not_found", res.Body["error"].(map[string]any)["code"])
}

func TestListPagesAndFilters(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Config(t), nil)
	var ids []int64
	for i, status := range []string{"active", "draft", "paused", "active", "active", "archived"} {
		ids = append(ids, api.CreatePopup(t, apitest.PopupSpec(fmt.Sprintf("Sale %d %s", i, status), map[string]any{"status": status, "link_url": "https://example.com/s"})))
	}
	list := func(query string) ([]int64, any) {
		t.Helper()
		res := api.AdminDo(t, http.MethodGet, "/admin/v1/popups?"+query, nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		var out []int64
		for _, p := range res.Body["popups"].([]any) {
			out = append(out, int64(p.(map[string]any)["id"].(float64)))
		}
		return out, res.Body["next"]
	}
	got, next := list("")
	assert.Equal(t, ids[:5], got)
	assert.Nil(t, next)
	got, _ = list("include_archived=true")
	assert.Equal(t, ids, got)
	got, _ = list("status=active")
	assert.Equal(t, []int64{ids[0], ids[3], ids[4]}, got)
	got, _ = list("status=archived")
	assert.Equal(t, []int64{ids[5]}, got)
	got, _ = list("q=sale%203")
	assert.Equal(t, []int64{ids[3]}, got, "a case-insensitive name substring")
	got, _ = list("q=%25")
	assert.Empty(t, got, "LIKE wildcards are matched literally")

	var paged []int64
	cursor := ""
	for page := 0; page < 10; page++ {
		got, next := list("limit=2&include_archived=true" + cursor)
		paged = append(paged, got...)
		if next == nil {
			break
		}
		cursor = "&cursor=" + next.(string)
	}
	assert.Equal(t, ids, paged)

	for _, tt := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=ten", "limit"}, {"cursor=x", "cursor"},
		{"status=gone", "status"}, {"include_archived=maybe", "include_archived"},
	} {
		res := api.AdminDo(t, http.MethodGet, "/admin/v1/popups?"+tt.query, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, tt.query)
		fields := res.Body["error"].(map[string]any)["fields"].([]any)
		assert.Equal(t, tt.field, fields[0].(map[string]any)["field"], tt.query)
	}
}
