package apiserver_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The popup model through the admin API against the real MariaDB and Redis: the bucket seed
// (issue 22, finding 3), campaign states (6), the list's sort, total and search (5) and saves
// that change nothing (10).

// errorField is the first field an error answer names.
func errorField(t *testing.T, res response) string {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	fields, _ := res.Body["error"].(map[string]any)["fields"].([]any)
	require.NotEmpty(t, fields, res.Raw)
	return fields[0].(map[string]any)["field"].(string)
}

// TestDraftExplainIsTheSavedExplain: 100 users previewed against a draft at 30% rollout get
// exactly the verdicts they get once it is saved. Before bucket seeds the draft was bucketed as
// popup 0 and the saved popup by its new id, and about half the users disagreed.
func TestDraftExplainIsTheSavedExplain(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	draft := popupSpec("thirty-percent", map[string]any{"bucket_seed": "c0ffee1234abcd00", "targeting": map[string]any{"rollout_percent": 30}})
	const users = 100
	uid := func(i int) string { return fmt.Sprintf("explain-user-%d", i) }

	drafted := make([]string, users)
	for i := range users {
		res := api.adminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": uid(i), "platform": "ios", "app_version": "8.1", "popup": draft})
		drafted[i] = reasonsOf(t, res)[0]
	}
	id := api.createPopup(t, draft)
	saved := make([]string, users)
	for i := range users {
		res := api.adminDo(t, http.MethodGet, "/admin/v1/preview?uid="+uid(i)+"&platform=ios&app_version=8.1", nil)
		saved[i] = reasonsOf(t, res)[id]
	}
	assert.Equal(t, drafted, saved, "each user's verdict for the draft is the saved popup's")
	chosen := 0
	for _, r := range saved {
		if r == "" {
			chosen++
		}
	}
	assert.InDelta(t, 30, chosen, 15, "about 30 of 100 users in the rollout")
	assert.Less(t, 0, chosen)

	// The draft of an edit without a seed is the saved popup's buckets; another seed is refused.
	res := api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "c0ffee1234abcd00", res.Body["bucket_seed"], "the seed the draft had")
	edit := popupSpec("thirty-percent", map[string]any{"id": id, "targeting": map[string]any{"rollout_percent": 30}})
	for i := range 20 {
		res := api.adminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": uid(i), "platform": "ios", "app_version": "8.1", "popup": edit})
		assert.Equal(t, saved[i], reasonsOf(t, res)[id], uid(i))
	}
	edit["bucket_seed"] = "another"
	res = api.adminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": uid(0), "platform": "ios", "app_version": "8.1", "popup": edit})
	assert.Equal(t, "popup.bucket_seed", errorField(t, res))
}

func TestTheBucketSeedIsKeptAndNeverChanged(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("seeded", nil))
	res := api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	seed, _ := res.Body["bucket_seed"].(string)
	assert.Regexp(t, `^[0-9a-f]{16}$`, seed, "a create without a seed draws one")

	// A GET's answer sent back as it is, with a change: the seed (and the state) come back too.
	back := res.Body
	back["title"] = "changed"
	res = api.adminDo(t, http.MethodPut, "/admin/v1/popups/"+itoa(id), back)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.adminDo(t, http.MethodPut, "/admin/v1/popups/"+itoa(id), popupSpec("seeded", map[string]any{"title": "no seed sent"}))
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, seed, res.Body["bucket_seed"], "omitted keeps the stored seed")

	res = api.adminDo(t, http.MethodPut, "/admin/v1/popups/"+itoa(id), popupSpec("seeded", map[string]any{"bucket_seed": "moved"}))
	assert.Equal(t, "bucket_seed", errorField(t, res))
	assert.Contains(t, res.Raw, "cannot change: it would move users between rollout buckets")
	res = api.adminDo(t, http.MethodPut, "/admin/v1/popups/"+itoa(id), popupSpec("seeded", map[string]any{"bucket_seed": "not a seed!"}))
	assert.Equal(t, "bucket_seed", errorField(t, res))

	res = api.adminDo(t, http.MethodPost, "/admin/v1/import", map[string]any{"popups": []any{
		popupSpec("brand-new", nil), popupSpec("seeded", map[string]any{"bucket_seed": "moved"}),
	}})
	assert.Equal(t, "popups[1].bucket_seed", errorField(t, res))
	res = api.adminDo(t, http.MethodGet, "/admin/v1/export", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.adminDo(t, http.MethodPost, "/admin/v1/import", map[string]any{"popups": res.Body["popups"]})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.EqualValues(t, 1, res.Body["unchanged"], "an export imported back changes nothing, seeds included")

	// The draft of an edit of an archived popup (not in the served config) keeps its seed too.
	res = api.adminDo(t, http.MethodDelete, "/admin/v1/popups/"+itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	res = api.adminDo(t, http.MethodPost, "/admin/v1/preview", map[string]any{"uid": "u1", "platform": "ios", "app_version": "8.1",
		"popup": popupSpec("seeded", map[string]any{"id": id, "bucket_seed": "moved"})})
	assert.Equal(t, "popup.bucket_seed", errorField(t, res))
}

// TestASaveThatChangesNothingWritesNothing is finding 10 of issue 22.
func TestASaveThatChangesNothingWritesNothing(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	api := start(t, cfg, nil)
	db := apitest.DB(t, cfg)
	id := api.createPopup(t, popupSpec("steady", nil))
	res := api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	stored, etag := res.Body, res.Header.Get("ETag")
	var version int64
	require.NoError(t, db.QueryRow("SELECT version FROM popup_config_version").Scan(&version))
	audit := countRows(t, db, "popup_audit")

	for _, tt := range []struct {
		name string
		do   func() response
	}{
		{"the GET sent back", func() response {
			return api.do(t, http.MethodPut, "http://"+api.admin+"/admin/v1/popups/"+itoa(id), stored,
				map[string]string{"Authorization": "Bearer " + token, "If-Match": etag})
		}},
		{"the same fields, the server's omitted", func() response {
			return api.adminDo(t, http.MethodPut, "/admin/v1/popups/"+itoa(id), popupSpec("steady", nil))
		}},
		{"a rollback to the revision it is at", func() response {
			return api.adminDo(t, http.MethodPost, "/admin/v1/popups/"+itoa(id)+"/rollback", map[string]any{"revision": 1})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.do()
			require.Equal(t, http.StatusOK, res.Status, res.Raw)
			assert.Equal(t, etag, res.Header.Get("ETag"))
			assert.Equal(t, stored["revision"], res.Body["revision"])
			assert.Equal(t, stored["updated_at"], res.Body["updated_at"])
		})
	}
	res = api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id)+"/history", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Len(t, res.Body["revisions"], 1, "no revision")
	assert.Equal(t, audit, countRows(t, db, "popup_audit"), "no audit entry")
	var after int64
	require.NoError(t, db.QueryRow("SELECT version FROM popup_config_version").Scan(&after))
	assert.Equal(t, version, after, "no config version")

	res = api.do(t, http.MethodPut, "http://"+api.admin+"/admin/v1/popups/"+itoa(id), stored,
		map[string]string{"Authorization": "Bearer " + token, "If-Match": `"9"`})
	assert.Equal(t, http.StatusPreconditionFailed, res.Status, "a stale If-Match is refused even when nothing would change")
}

func TestCampaignStatesAndTheirFilter(t *testing.T) {
	t.Parallel()
	clk := newClock() // 2026-11-22 10:00 UTC
	api := start(t, testConfig(t), clk)
	at := func(d time.Duration) string { return clk.Now().Add(d).Format(time.RFC3339) }
	ids := map[string]int64{
		"draft":     api.createPopup(t, popupSpec("a-draft", map[string]any{"status": "draft"})),
		"scheduled": api.createPopup(t, popupSpec("a-scheduled", map[string]any{"start_at": at(24 * time.Hour)})),
		"running":   api.createPopup(t, popupSpec("a-running", map[string]any{"start_at": at(-time.Hour), "end_at": at(time.Hour)})),
		"paused":    api.createPopup(t, popupSpec("a-paused", map[string]any{"status": "paused"})),
		"ended":     api.createPopup(t, popupSpec("an-ended", map[string]any{"start_at": at(-48 * time.Hour), "end_at": at(-24 * time.Hour)})),
		"archived":  api.createPopup(t, popupSpec("an-archived", map[string]any{"status": "archived"})),
	}
	for state, id := range ids {
		res := api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(id), nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		assert.Equal(t, state, res.Body["state"], "GET of the %s popup", state)

		res = api.adminDo(t, http.MethodGet, "/admin/v1/popups?state="+state, nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		require.Len(t, res.Body["popups"], 1, state)
		assert.EqualValues(t, id, res.Body["popups"].([]any)[0].(map[string]any)["id"], state)
		assert.EqualValues(t, 1, res.Body["total"], state)
	}
	// Time passes: the scheduled campaign runs, the running one ends.
	clk.Advance(25 * time.Hour)
	res := api.adminDo(t, http.MethodGet, "/admin/v1/popups?state=ended&sort=id", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.EqualValues(t, 2, res.Body["total"])
	res = api.adminDo(t, http.MethodGet, "/admin/v1/popups/"+itoa(ids["scheduled"]), nil)
	assert.Equal(t, "running", res.Body["state"])

	assert.Equal(t, "state", errorField(t, api.adminDo(t, http.MethodGet, "/admin/v1/popups?state=active", nil)))
}

func TestListSortsPagesCountsAndSearches(t *testing.T) {
	t.Parallel()
	api := start(t, testConfig(t), nil)
	var ids []int64
	for i := range 7 {
		ids = append(ids, api.createPopup(t, popupSpec(fmt.Sprintf("list-%d", i), map[string]any{"priority": i % 2, "content": fmt.Sprintf("body %d", i)})))
	}
	// The oldest is edited last: it is the most recently updated.
	res := api.adminDo(t, http.MethodPut, "/admin/v1/popups/"+itoa(ids[0]), popupSpec("list-0", map[string]any{"priority": 0, "content": "Needle in the CONTENT"}))
	require.Equal(t, http.StatusOK, res.Status, res.Raw)

	page := func(query string) ([]int64, *string, float64) {
		t.Helper()
		res := api.adminDo(t, http.MethodGet, "/admin/v1/popups?"+query, nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		var got []int64
		for _, p := range res.Body["popups"].([]any) {
			got = append(got, int64(p.(map[string]any)["id"].(float64)))
		}
		next, _ := res.Body["next"].(string)
		if next == "" {
			return got, nil, res.Body["total"].(float64)
		}
		return got, &next, res.Body["total"].(float64)
	}
	got, _, total := page("sort=-updated_at&limit=1")
	assert.Equal(t, []int64{ids[0]}, got, "newest first")
	assert.EqualValues(t, 7, total)

	// -priority pages of 2 through ties: priority 1 (ids 1, 3, 5 descending), then priority 0.
	var all []int64
	query := "sort=-priority&limit=2"
	for {
		got, next, total := page(query)
		assert.EqualValues(t, 7, total, "the total ignores the page")
		all = append(all, got...)
		if next == nil {
			break
		}
		query = "sort=-priority&limit=2&cursor=" + url.QueryEscape(*next)
		assert.Equal(t, "cursor", errorField(t, api.adminDo(t, http.MethodGet, "/admin/v1/popups?sort=priority&cursor="+url.QueryEscape(*next), nil)),
			"a cursor of another sort")
	}
	assert.Equal(t, []int64{ids[5], ids[3], ids[1], ids[6], ids[4], ids[2], ids[0]}, all)

	got, _, total = page("q=needle+in+the+content")
	assert.Equal(t, []int64{ids[0]}, got, "q searches the content, any case")
	assert.EqualValues(t, 1, total)
	got, _, _ = page("q=list-3+title")
	assert.Equal(t, []int64{ids[3]}, got, "q searches the title")
	got, _, _ = page("q=" + itoa(ids[4]))
	assert.Contains(t, got, ids[4], "q that is a number finds the id")
	assert.Equal(t, "sort", errorField(t, api.adminDo(t, http.MethodGet, "/admin/v1/popups?sort=title", nil)))
}

func reasonsOf(t *testing.T, res response) map[int64]string {
	t.Helper()
	return apitest.ReasonsOf(t, res)
}
