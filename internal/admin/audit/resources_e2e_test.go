package audit_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// changeReader reads GET /admin/v1/audit/changes through the OpenAPI checker.
type changeReader struct{ apitest.AdminClient }

func newReader(t *testing.T, in *apitest.Instance) changeReader {
	return changeReader{apitest.AdminClient{Spec: apitest.NewSpecChecker(t, in.Public, in.Admin), Base: "http://" + in.Admin}}
}

// page is one page of query's changes and its next cursor ("" on the last).
func (c changeReader) page(t *testing.T, query string) ([]map[string]any, string) {
	t.Helper()
	got := c.Do(t, "GET", "/admin/v1/audit/changes?"+query, "", nil, http.StatusOK)
	entries, ok := got.Body["entries"].([]any)
	require.True(t, ok, "entries: %s", got.Raw)
	out := []map[string]any{}
	for _, e := range entries {
		out = append(out, e.(map[string]any))
	}
	next, _ := got.Body["next"].(string)
	return out, next
}

func (c changeReader) changes(t *testing.T, query string) []map[string]any {
	t.Helper()
	out, _ := c.page(t, query+"&limit=500")
	return out
}

// actions are the entries' actions, in order.
func actions(entries []map[string]any, keys ...string) []string {
	var out []string
	for _, e := range entries {
		parts := []string{}
		for _, k := range keys {
			v, _ := e[k].(string)
			parts = append(parts, v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func at(t *testing.T, e map[string]any) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, e["at"].(string))
	require.NoError(t, err)
	return v
}

// TestTheAuditLogRecordsTheOperatorsOfEachStart: the first start records every operator as
// added; a start with another role, another token or an operator fewer records each difference
// (never the token); a start with the same operators records nothing.
func TestTheAuditLogRecordsTheOperatorsOfEachStart(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.AdminTokens = []string{"ana@editor:ana-token-one", "bob@viewer:bob-token"}
	first := newReader(t, apitest.Start(t, cfg, nil))
	got := first.changes(t, "resource=operators")
	assert.ElementsMatch(t, []string{"add admin admin", "add ana editor", "add bob viewer"}, actions(got, "action", "subject", "after"))
	for _, e := range got {
		assert.Equal(t, "(configuration)", e["actor"])
		assert.Equal(t, e["subject"], e["name"])
	}

	cfg.AdminTokens = []string{"ana@publisher:ana-token-two"}
	second := newReader(t, apitest.Start(t, cfg, nil))
	got = second.changes(t, "resource=operators")
	require.Len(t, got, 6, "%v", got)
	assert.Equal(t, []string{"remove bob viewer ", "token ana  ", "role ana editor publisher"}, actions(got[:3], "action", "subject", "before", "after"))
	raw := second.Do(t, "GET", "/admin/v1/audit/changes?resource=operators", "", nil, http.StatusOK).Raw
	assert.NotContains(t, raw, "token-one")
	assert.NotContains(t, raw, "token-two")

	apitest.Start(t, cfg, nil)
	assert.Len(t, second.changes(t, "resource=operators"), 6, "the same operators again: nothing recorded")
	assert.Len(t, second.changes(t, "resource=operators&name=AN"), 3, "ana's add, role and token")
}

// TestTheAuditLogRecordsPrivacyRequests: an erasure asked (by whom), its completion by
// popup-worker (with what it removed) and an export are in the log; never the uid.
func TestTheAuditLogRecordsPrivacyRequests(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.PrivacyKey = "test-privacy-key-0123456789abcdef0123456789abcdef"
	cfg.AdminTokens = []string{"dpo@admin:dpo-token"}
	in := apitest.Start(t, cfg, nil)
	c := newReader(t, in)
	dpo := map[string]string{"Authorization": "Bearer dpo-token"}
	const uid = "privacy-user-0042"
	c.Do(t, "GET", "/admin/v1/users/"+uid+"/export", "", dpo, http.StatusOK)
	c.Do(t, "DELETE", "/admin/v1/users/"+uid, "", nil, http.StatusAccepted)
	got := c.changes(t, "resource=privacy")
	require.Len(t, got, 2, "%v", got)
	assert.Equal(t, []string{"erasure admin admin", "export dpo admin"}, actions(got, "action", "actor", "role"))
	assert.Len(t, got[0]["subject"], 32, "the erasure's id")
	assert.Nil(t, got[0]["name"])
	assert.Nil(t, got[0]["removed"], "not done yet")

	apitest.StartWorker(t, cfg)
	apitest.Eventually(t, 30*time.Second, "the erasure done in the log", func() bool {
		return len(c.changes(t, "resource=privacy")) == 3
	})
	got = c.changes(t, "resource=privacy")
	assert.Equal(t, "erased (erasure)", actions(got[:1], "action", "actor")[0])
	assert.Equal(t, got[1]["subject"], got[0]["subject"])
	assert.NotNil(t, got[0]["removed"])
	raw := c.Do(t, "GET", "/admin/v1/audit/changes?resource=all", "", nil, http.StatusOK).Raw
	assert.NotContains(t, raw, uid)
	assert.Empty(t, c.changes(t, "resource=privacy&name=privacy"), "a privacy request has no name")
}

// TestTheAuditLogOfEveryResourceFiltersAndPages: experiments' transitions are their own resource
// (not the popups'), each change names its subject, the name filter finds a substring whatever
// its case across resources, resource=all (or none) merges every resource newest first and pages
// through all of it exactly once, and a bad parameter is a 400 naming it.
func TestTheAuditLogOfEveryResourceFiltersAndPages(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	c := newReader(t, in)

	id := in.CreatePopup(t, apitest.PopupSpec("Spring sale", map[string]any{"link_url": "https://example.com/spring", "experiment": map[string]any{
		"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}}))
	pid := apitest.Itoa(id)
	c.Do(t, "POST", "/admin/v1/popups/"+pid+"/experiment/start", "", nil, http.StatusOK)
	c.Do(t, "POST", "/admin/v1/popups/"+pid+"/experiment/conclude", `{"variant":"b"}`, nil, http.StatusOK)
	aud := c.Do(t, "POST", "/admin/v1/audiences", `{"name":"VIP buyers"}`, nil, http.StatusCreated)
	c.Do(t, "POST", "/admin/v1/goals", `{"key":"signup","name":"Spring signup"}`, nil, http.StatusCreated)
	c.Do(t, "PUT", "/admin/v1/settings", `{"reporting_time_zone":"UTC","daily_cap":5,"holdout_percent":10}`, nil, http.StatusOK)

	exp := c.changes(t, "resource=experiments")
	require.Len(t, exp, 2, "%v", exp)
	assert.Equal(t, []string{"experiment_conclude Spring sale b", "experiment_start Spring sale "}, actions(exp, "action", "name", "after"))
	assert.Equal(t, float64(id), exp[0]["popup_id"])
	pops := c.changes(t, "resource=popups")
	assert.Equal(t, []string{"create Spring sale"}, actions(pops, "action", "name"))
	auds := c.changes(t, "resource=audiences")
	assert.Equal(t, []string{"create VIP buyers"}, actions(auds, "action", "name"))
	assert.Equal(t, apitest.Itoa(apitest.Num(aud.Body["id"])), auds[0]["subject"])
	assert.Equal(t, []string{"create signup Spring signup"}, actions(c.changes(t, "resource=goals"), "action", "subject", "name"))

	found := c.changes(t, "name=sPrInG")
	assert.ElementsMatch(t, []string{"goals create", "experiments experiment_conclude", "experiments experiment_start", "popups create"},
		actions(found, "resource", "action"))
	assert.Equal(t, []string{"daily_cap"}, actions(c.changes(t, "resource=settings&name=CAP"), "subject"))
	assert.Empty(t, c.changes(t, "name=%25"), "% is a character, not a wildcard")
	assert.Empty(t, c.changes(t, "resource=holdout&name=a"), "a holdout phase has no name")

	all := c.changes(t, "resource=all")
	assert.Equal(t, all, c.changes(t, "x=1"), "no resource is all")
	kinds := map[string]bool{}
	for i, e := range all {
		kinds[e["resource"].(string)] = true
		if i > 0 {
			assert.False(t, at(t, all[i-1]).Before(at(t, e)), "newest first: %v", all)
		}
	}
	for _, r := range []string{"popups", "experiments", "audiences", "goals", "settings", "holdout", "operators"} {
		assert.True(t, kinds[r], "all holds %s: %v", r, all)
	}
	var paged []map[string]any
	for q, pages := "resource=all&limit=2", 0; ; pages++ {
		require.Less(t, pages, len(all), "paging ends")
		page, next := c.page(t, q)
		paged = append(paged, page...)
		if next == "" {
			break
		}
		q = "resource=all&limit=2&before=" + url.QueryEscape(next)
	}
	assert.Equal(t, all, paged, "every change once, in the same order")

	for _, bad := range []struct{ query, field string }{
		{"resource=pets", "resource"}, {"resource=", "resource"}, {"name=", "name"}, {"name=" + strings.Repeat("x", 401), "name"},
		{"before=12", "before"}, {"resource=all&before=1-99-3", "before"}, {"resource=goals&before=1-0-3", "before"},
		{"limit=0", "limit"}, {"actor=a%20b", "actor"},
	} {
		a := c.Do(t, "GET", "/admin/v1/audit/changes?"+bad.query, "", nil, http.StatusBadRequest)
		code, field := a.ErrorOf(t)
		assert.Equal(t, []string{"invalid_query", bad.field}, []string{code, field}, bad.query)
	}
}
