package apiserver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/testenv"
	"popupsvc/internal/uidauth"
)

// specChecker validates real answers of a running popup-api against api/openapi.yaml
// (apitest.SpecChecker), with the rows of call this package's tests are written in.
type specChecker struct{ *apitest.SpecChecker }

func newSpecChecker(t *testing.T, hosts ...string) *specChecker {
	t.Helper()
	return &specChecker{apitest.NewSpecChecker(t, hosts...)}
}

// call is one request and the statuses it may answer. Rows that list two statuses are answered
// one way today and the other once a change in flight lands (noted on the row); keep the later
// one when it has.
type call struct {
	name    string
	method  string
	url     string
	body    string
	header  map[string]string
	want    []int
	errCode string // the error code a 4xx must carry, when it matters
}

func (s *specChecker) do(t *testing.T, c call) (status int, body []byte, header http.Header) {
	t.Helper()
	return s.Do(t, apitest.Call{Name: c.name, Method: c.method, URL: c.url, Body: c.body, Header: c.header, Want: c.want, ErrCode: c.errCode})
}

// TestResponsesMatchOpenAPI sends every route of both listeners good and bad requests against a
// real popup-api on MariaDB and Redis, and validates every answer against api/openapi.yaml. (The
// experiment routes are driven through the same checker by TestExperimentAdminLifecycle, in
// internal/admin/popups.)
func TestResponsesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	clk := newClock()
	cfg := testConfig(t)
	cfg.AdminTokens = []string{"ed@editor:tok-editor", "vera@viewer:tok-viewer"} // the 403s
	api := start(t, cfg, clk)

	// A second instance that demands the gateway's uid signature and rate-limits actions: the
	// 401 and 429 answers of the public routes.
	key := strings.Repeat("k", uidauth.MinKeyLen)
	strictCfg := testConfig(t)
	strictCfg.UIDHMACKeys = []string{key}
	strictCfg.ActionRateLimit = 1
	strict := start(t, strictCfg, clk)

	s := newSpecChecker(t, api.public, api.admin, strict.public, strict.admin)
	pub, adm, spub := "http://"+api.public, "http://"+api.admin, "http://"+strict.public
	auth := map[string]string{"Authorization": "Bearer " + token}
	editor := map[string]string{"Authorization": "Bearer tok-editor"}
	viewer := map[string]string{"Authorization": "Bearer tok-viewer"}
	withAuth := func(h map[string]string) map[string]string {
		out := map[string]string{"Authorization": "Bearer " + token}
		for k, v := range h {
			out[k] = v
		}
		return out
	}

	// Popups to act on, created through the checked admin API.
	create := func(name, extra string) string {
		_, body, _ := s.do(t, call{name: "create " + name, method: http.MethodPost, url: adm + "/admin/v1/popups",
			body:   `{"name":"` + name + `","title":"t","link_url":"https://example.com/x","buttons":[{"text":"Open","link_url":"https://example.com/o"}]` + extra + `}`,
			header: auth, want: []int{http.StatusCreated}})
		var p struct{ ID int64 }
		require.NoError(t, json.Unmarshal(body, &p), "%s", body)
		require.Positive(t, p.ID)
		return itoa(p.ID)
	}
	active := create("openapi-active", "")
	draft := create("openapi-draft", `,"status":"draft"`)
	archived := create("openapi-archived", "")
	other := create("openapi-other", "")
	s.do(t, call{method: http.MethodDelete, url: adm + "/admin/v1/popups/" + archived, header: auth, want: []int{http.StatusOK}})
	strictID := ""
	{
		_, body, _ := s.do(t, call{method: http.MethodPost, url: "http://" + strict.admin + "/admin/v1/popups",
			body: `{"name":"openapi-strict"}`, header: auth, want: []int{http.StatusCreated}})
		var p struct{ ID int64 }
		require.NoError(t, json.Unmarshal(body, &p))
		strictID = itoa(p.ID)
	}
	api.WaitServed(t, active)
	strict.WaitServed(t, strictID)

	// The popup as GET returns it, to send back on PUT.
	_, stored, _ := s.do(t, call{method: http.MethodGet, url: adm + "/admin/v1/popups/" + active, header: auth, want: []int{http.StatusOK}})

	// A popup with an experiment, and its phase's counts as the worker would have written them.
	experimented := create("openapi-experiment", `,"status":"draft","experiment":{"variants":[{"key":"a","weight":40,"title":"A"},`+
		`{"key":"b","weight":40,"title":"B"}],"control":{"weight":20,"mode":"none"}}`)
	{
		_, body, _ := s.do(t, call{method: http.MethodGet, url: adm + "/admin/v1/popups/" + experimented, header: auth, want: []int{http.StatusOK}})
		var p struct{ Experiment struct{ Salt string } }
		require.NoError(t, json.Unmarshal(body, &p), "%s", body)
		require.NotEmpty(t, p.Experiment.Salt)
		db, err := sql.Open("mysql", cfg.MySQLDSN)
		require.NoError(t, err)
		_, err = db.ExecContext(context.Background(), `INSERT INTO popup_experiment_daily
			(popup_id, salt, arm, day, exposed_users, exposures, clicked_users, clicks, closes) VALUES
			(?, ?, 'a', '2026-11-24', 1200, 1500, 60, 70, 300), (?, ?, 'b', '2026-11-24', 1190, 1450, 0, 0, 280),
			(?, ?, 'control', '2026-11-24', 610, 700, 0, 0, 0), (?, ?, 'a', '2026-11-25', 30, 40, 2, 2, 5)`,
			experimented, p.Experiment.Salt, experimented, p.Experiment.Salt, experimented, p.Experiment.Salt, experimented, p.Experiment.Salt)
		require.NoError(t, err)
		require.NoError(t, db.Close())
	}

	sig := func(uid string) map[string]string {
		return map[string]string{uidauth.Header: uidauth.Sign(key, uid, clk.Now())}
	}
	q := "/api/v1/popup?platform=ios&app_version=8.10.0&uid="
	actions := func(id string) string { return pub + "/api/v1/popups/" + id + "/actions" }
	big := `{"uid":"u1","action":"click","event_id":"` + strings.Repeat("x", 5000) + `"}`
	huge := `{"name":"huge","content":"` + strings.Repeat("x", 1<<20) + `"}`
	const (
		ok, created, accepted           = http.StatusOK, http.StatusCreated, http.StatusAccepted
		bad, unauth, notFound, noMethod = http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed
		precondition, tooLarge, tooMany = http.StatusPreconditionFailed, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests
		forbidden                       = http.StatusForbidden
	)

	calls := []call{
		// public: the decision
		{name: "popup shown", method: "GET", url: pub + q + "oa-1", want: []int{ok}},
		{name: "nothing targets web", method: "GET", url: pub + "/api/v1/popup?uid=oa-1&platform=web&app_version=1&region=xx", want: []int{ok}},
		{name: "bad uid", method: "GET", url: pub + q + url.QueryEscape("bad uid!"), want: []int{bad}, errCode: "invalid_uid"},
		{name: "missing platform", method: "GET", url: pub + "/api/v1/popup?uid=oa-1&app_version=1", want: []int{bad}},
		{name: "bad app_version", method: "GET", url: pub + "/api/v1/popup?uid=oa-1&platform=ios&app_version=8.x", want: []int{bad}},
		{name: "POST on the GET route", method: "POST", url: pub + "/api/v1/popup", want: []int{noMethod}},
		{name: "unknown public path", method: "GET", url: pub + "/nope", want: []int{notFound}},
		{name: "unsigned uid", method: "GET", url: spub + q + "oa-2", want: []int{unauth}, errCode: "uid_signature_missing"},
		{name: "signed uid", method: "GET", url: spub + q + "oa-2", header: sig("oa-2"), want: []int{ok}},

		// public: actions
		{name: "click", method: "POST", url: actions(active), body: `{"uid":"oa-1","action":"click","event_id":"e-1"}`, want: []int{accepted}},
		{name: "click replayed", method: "POST", url: actions(active), body: `{"uid":"oa-1","action":"click","event_id":"e-1"}`, want: []int{accepted}},
		{name: "same event_id, other uid", method: "POST", url: actions(active), body: `{"uid":"oa-3","action":"close","event_id":"e-1"}`, want: []int{accepted}},
		// draft and paused popups take actions (they may have been shown); archived ones are gone
		{name: "action on a draft", method: "POST", url: actions(draft), body: `{"uid":"oa-1","action":"close"}`, want: []int{accepted}},
		{name: "action on an archived popup", method: "POST", url: actions(archived), body: `{"uid":"oa-1","action":"close"}`, want: []int{notFound}},
		{name: "action on an unknown popup", method: "POST", url: actions("999999999"), body: `{"uid":"oa-1","action":"close"}`, want: []int{notFound}, errCode: "popup_not_found"},
		{name: "popup id not a number", method: "POST", url: actions("abc"), body: `{"uid":"oa-1","action":"close"}`, want: []int{bad}, errCode: "invalid_popup_id"},
		{name: "body not JSON", method: "POST", url: actions(active), body: `{"uid":`, want: []int{bad}, errCode: "invalid_json"},
		{name: "bad action", method: "POST", url: actions(active), body: `{"uid":"oa-1","action":"like"}`, want: []int{bad}, errCode: "invalid_action"},
		{name: "bad event_id", method: "POST", url: actions(active), body: `{"uid":"oa-1","action":"click","event_id":"a b"}`, want: []int{bad}},
		{name: "click on button 0", method: "POST", url: actions(active), body: `{"uid":"oa-5","action":"click","button":0}`, want: []int{accepted}},
		{name: "click on a button the popup lacks", method: "POST", url: actions(active), body: `{"uid":"oa-5","action":"click","button":1}`, want: []int{bad}, errCode: "invalid_button"},
		{name: "button not an integer", method: "POST", url: actions(active), body: `{"uid":"oa-5","action":"click","button":0.5}`, want: []int{bad}, errCode: "invalid_button"},
		{name: "button with close", method: "POST", url: actions(active), body: `{"uid":"oa-5","action":"close","button":0}`, want: []int{bad}, errCode: "invalid_button"},
		{name: "body over 4 KiB", method: "POST", url: actions(active), body: big, want: []int{tooLarge}, errCode: "body_too_large"},
		{name: "GET on the actions route", method: "GET", url: actions(active), want: []int{noMethod}},
		{name: "unsigned action", method: "POST", url: spub + "/api/v1/popups/" + strictID + "/actions", body: `{"uid":"oa-4","action":"click"}`, want: []int{unauth}},
		{name: "signed action", method: "POST", url: spub + "/api/v1/popups/" + strictID + "/actions", body: `{"uid":"oa-4","action":"click"}`, header: sig("oa-4"), want: []int{accepted}},
		{name: "over the rate limit", method: "POST", url: spub + "/api/v1/popups/" + strictID + "/actions", body: `{"uid":"oa-4","action":"close"}`, header: sig("oa-4"), want: []int{tooMany}, errCode: "rate_limited"},

		// public: health
		{name: "healthz", method: "GET", url: pub + "/healthz", want: []int{ok}},
		{name: "healthz HEAD", method: "HEAD", url: pub + "/healthz", want: []int{ok}},
		{name: "readyz", method: "GET", url: pub + "/readyz", want: []int{ok}},
		{name: "readyz HEAD", method: "HEAD", url: pub + "/readyz", want: []int{ok}},
		{name: "POST healthz", method: "POST", url: pub + "/healthz", want: []int{noMethod}},

		// admin: auth
		{name: "list without token", method: "GET", url: adm + "/admin/v1/popups", want: []int{unauth}, errCode: "unauthorized"},
		{name: "wrong token", method: "GET", url: adm + "/admin/v1/popups/" + active, header: map[string]string{"Authorization": "Bearer nope"}, want: []int{unauth}},
		{name: "metrics without token", method: "GET", url: adm + "/metrics", want: []int{unauth}},
		{name: "reload without token", method: "POST", url: adm + "/admin/v1/cache/reload", want: []int{unauth}},
		{name: "unknown admin path without token", method: "GET", url: adm + "/nope", want: []int{unauth}},
		{name: "unknown admin path", method: "GET", url: adm + "/admin/v1/nope", header: auth, want: []int{notFound}},

		// admin: list and create
		{name: "list", method: "GET", url: adm + "/admin/v1/popups", header: auth, want: []int{ok}},
		{name: "list archived too", method: "GET", url: adm + "/admin/v1/popups?include_archived=true", header: auth, want: []int{ok}},
		{name: "list include_archived=yes", method: "GET", url: adm + "/admin/v1/popups?include_archived=yes", header: auth, want: []int{ok}},
		{name: "list include_archived=maybe", method: "GET", url: adm + "/admin/v1/popups?include_archived=maybe", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "create with defaults", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"openapi-min"}`, header: auth, want: []int{created}},
		{name: "create without name", method: "POST", url: adm + "/admin/v1/popups", body: `{"title":"x"}`, header: auth, want: []int{bad}, errCode: "validation_failed"},
		{name: "create with bad fields", method: "POST", url: adm + "/admin/v1/popups", header: auth, want: []int{bad}, errCode: "validation_failed",
			body: `{"name":"x","status":"live","targeting":{"platforms":["bb"],"min_app_version":"x","rollout_percent":101},"reshow_after_seconds":-1,"buttons":[{"text":""}]}`},
		{name: "create with unknown field", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"x","colour":"red"}`, header: auth, want: []int{bad}},
		{name: "create with ext not an object", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"x","ext":[1]}`, header: auth, want: []int{bad}},
		{name: "create with a javascript: link", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"x","link_url":"javascript:alert(1)"}`, header: auth, want: []int{bad}},
		{name: "create with priority 2^31", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"x","priority":2147483648}`, header: auth, want: []int{bad}},
		{name: "create body not JSON", method: "POST", url: adm + "/admin/v1/popups", body: `[`, header: auth, want: []int{bad}, errCode: "invalid_json"},
		{name: "create body over 1 MiB", method: "POST", url: adm + "/admin/v1/popups", body: huge, header: auth, want: []int{tooLarge}},
		{name: "PATCH a popup", method: "PATCH", url: adm + "/admin/v1/popups/" + active, header: auth, want: []int{noMethod}},

		// admin: one popup
		{name: "get", method: "GET", url: adm + "/admin/v1/popups/" + active, header: auth, want: []int{ok}},
		{name: "get archived", method: "GET", url: adm + "/admin/v1/popups/" + archived, header: auth, want: []int{ok}},
		{name: "get unknown", method: "GET", url: adm + "/admin/v1/popups/999999999", header: auth, want: []int{notFound}, errCode: "popup_not_found"},
		{name: "get id not a number", method: "GET", url: adm + "/admin/v1/popups/abc", header: auth, want: []int{bad}},
		{name: "get id 0", method: "GET", url: adm + "/admin/v1/popups/0", header: auth, want: []int{bad}},
		{name: "put", method: "PUT", url: adm + "/admin/v1/popups/" + active, body: `{"name":"openapi-active","priority":5}`, header: auth, want: []int{ok}},
		{name: "put what GET returned", method: "PUT", url: adm + "/admin/v1/popups/" + active, body: string(stored), header: auth, want: []int{ok}},
		{name: "put another id", method: "PUT", url: adm + "/admin/v1/popups/" + active, body: `{"id":999999,"name":"x"}`, header: auth, want: []int{bad}},
		{name: "put with a stale If-Match", method: "PUT", url: adm + "/admin/v1/popups/" + active, body: `{"name":"openapi-active"}`,
			header: withAuth(map[string]string{"If-Match": `"999999"`}), want: []int{precondition}, errCode: "precondition_failed"},
		{name: "put invalid", method: "PUT", url: adm + "/admin/v1/popups/" + active, body: `{"name":""}`, header: auth, want: []int{bad}, errCode: "validation_failed"},
		{name: "put unknown", method: "PUT", url: adm + "/admin/v1/popups/999999999", body: `{"name":"x"}`, header: auth, want: []int{notFound}},
		{name: "put body over 1 MiB", method: "PUT", url: adm + "/admin/v1/popups/" + active, body: huge, header: auth, want: []int{tooLarge}},
		{name: "delete with a stale If-Match", method: "DELETE", url: adm + "/admin/v1/popups/" + draft,
			header: withAuth(map[string]string{"If-Match": `"999999"`}), want: []int{precondition}},
		{name: "delete", method: "DELETE", url: adm + "/admin/v1/popups/" + draft, header: auth, want: []int{ok}},
		{name: "delete unknown", method: "DELETE", url: adm + "/admin/v1/popups/999999999", header: auth, want: []int{notFound}},

		// admin: change control
		{name: "list page", method: "GET", url: adm + "/admin/v1/popups?limit=1", header: auth, want: []int{ok}},
		{name: "list filtered", method: "GET", url: adm + "/admin/v1/popups?status=active&q=openapi&limit=1000&cursor=1", header: auth, want: []int{ok}},
		{name: "list limit 0", method: "GET", url: adm + "/admin/v1/popups?limit=0", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "list bad cursor", method: "GET", url: adm + "/admin/v1/popups?cursor=x", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "list bad status", method: "GET", url: adm + "/admin/v1/popups?status=gone", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "list sorted, by state", method: "GET", url: adm + "/admin/v1/popups?sort=-updated_at&state=running&q=openapi&limit=1", header: auth, want: []int{ok}},
		{name: "list bad sort", method: "GET", url: adm + "/admin/v1/popups?sort=title", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "list bad state", method: "GET", url: adm + "/admin/v1/popups?state=active", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "list of running experiments", method: "GET", url: adm + "/admin/v1/popups?experiment=running", header: auth, want: []int{ok}},
		{name: "list bad experiment filter", method: "GET", url: adm + "/admin/v1/popups?experiment=live", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "create with a live name", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"openapi-active"}`, header: auth, want: []int{http.StatusConflict}, errCode: "name_taken"},
		{name: "put a live name", method: "PUT", url: adm + "/admin/v1/popups/" + other, body: `{"name":"openapi-active"}`, header: auth, want: []int{http.StatusConflict}, errCode: "name_taken"},
		{name: "history", method: "GET", url: adm + "/admin/v1/popups/" + active + "/history", header: auth, want: []int{ok}},
		{name: "history of an archived popup", method: "GET", url: adm + "/admin/v1/popups/" + archived + "/history", header: auth, want: []int{ok}},
		{name: "history unknown", method: "GET", url: adm + "/admin/v1/popups/999999999/history", header: auth, want: []int{notFound}, errCode: "popup_not_found"},
		{name: "history id not a number", method: "GET", url: adm + "/admin/v1/popups/abc/history", header: auth, want: []int{bad}, errCode: "invalid_popup_id"},
		{name: "POST history", method: "POST", url: adm + "/admin/v1/popups/" + active + "/history", header: auth, want: []int{noMethod}},
		{name: "rollback", method: "POST", url: adm + "/admin/v1/popups/" + active + "/rollback", body: `{"revision":1}`, header: auth, want: []int{ok}},
		{name: "rollback with a stale If-Match", method: "POST", url: adm + "/admin/v1/popups/" + active + "/rollback", body: `{"revision":1}`,
			header: withAuth(map[string]string{"If-Match": `"1"`}), want: []int{precondition}, errCode: "precondition_failed"},
		{name: "rollback to a revision never had", method: "POST", url: adm + "/admin/v1/popups/" + active + "/rollback", body: `{"revision":999}`, header: auth, want: []int{notFound}, errCode: "revision_not_found"},
		{name: "rollback of an unknown popup", method: "POST", url: adm + "/admin/v1/popups/999999999/rollback", body: `{"revision":1}`, header: auth, want: []int{notFound}, errCode: "popup_not_found"},
		{name: "rollback revision 0", method: "POST", url: adm + "/admin/v1/popups/" + active + "/rollback", body: `{"revision":0}`, header: auth, want: []int{bad}, errCode: "validation_failed"},
		{name: "rollback revision a string", method: "POST", url: adm + "/admin/v1/popups/" + active + "/rollback", body: `{"revision":"1"}`, header: auth, want: []int{bad}, errCode: "invalid_json"},
		{name: "rollback body over 4 KiB", method: "POST", url: adm + "/admin/v1/popups/" + active + "/rollback", body: `{"revision":1,"x":"` + strings.Repeat("x", 5000) + `"}`, header: auth, want: []int{tooLarge}},
		{name: "rollback over an archive", method: "POST", url: adm + "/admin/v1/popups/" + archived + "/rollback", body: `{"revision":1}`, header: auth, want: []int{ok}},
		{name: "GET rollback", method: "GET", url: adm + "/admin/v1/popups/" + active + "/rollback", header: auth, want: []int{noMethod}},
		{name: "audit", method: "GET", url: adm + "/admin/v1/audit", header: auth, want: []int{ok}},
		{name: "audit filtered", method: "GET", url: adm + "/admin/v1/audit?popup_id=" + active + "&actor=admin&limit=1&before=999999", header: auth, want: []int{ok}},
		{name: "audit limit 501", method: "GET", url: adm + "/admin/v1/audit?limit=501", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "audit bad actor", method: "GET", url: adm + "/admin/v1/audit?actor=" + url.QueryEscape("a b"), header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "audit without token", method: "GET", url: adm + "/admin/v1/audit", want: []int{unauth}},
		{name: "POST audit", method: "POST", url: adm + "/admin/v1/audit", header: auth, want: []int{noMethod}},
		{name: "audience changes", method: "GET", url: adm + "/admin/v1/audit/changes?resource=audiences", header: auth, want: []int{ok}},
		{name: "goal changes", method: "GET", url: adm + "/admin/v1/audit/changes?resource=goals&limit=1", header: auth, want: []int{ok}},
		{name: "setting changes", method: "GET", url: adm + "/admin/v1/audit/changes?resource=settings&actor=admin&before=999999", header: viewer, want: []int{ok}},
		{name: "holdout changes", method: "GET", url: adm + "/admin/v1/audit/changes?resource=holdout", header: auth, want: []int{ok}},
		{name: "changes without a resource", method: "GET", url: adm + "/admin/v1/audit/changes", header: auth, want: []int{ok}},
		{name: "changes of popups by name", method: "GET", url: adm + "/admin/v1/audit/changes?resource=popups&name=openapi", header: auth, want: []int{ok}},
		{name: "changes of every resource, one page", method: "GET", url: adm + "/admin/v1/audit/changes?resource=all&limit=1&before=1796117400120-2-41", header: auth, want: []int{ok}},
		{name: "changes of no such resource", method: "GET", url: adm + "/admin/v1/audit/changes?resource=pets", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "changes of every resource, bad cursor", method: "GET", url: adm + "/admin/v1/audit/changes?before=41", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "changes limit 501", method: "GET", url: adm + "/admin/v1/audit/changes?resource=goals&limit=501", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "changes bad cursor", method: "GET", url: adm + "/admin/v1/audit/changes?resource=goals&before=x", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "changes without token", method: "GET", url: adm + "/admin/v1/audit/changes?resource=goals", want: []int{unauth}},
		{name: "POST changes", method: "POST", url: adm + "/admin/v1/audit/changes", header: auth, want: []int{noMethod}},
		{name: "export", method: "GET", url: adm + "/admin/v1/export", header: auth, want: []int{ok}},
		{name: "POST export", method: "POST", url: adm + "/admin/v1/export", header: auth, want: []int{noMethod}},
		{name: "import dry run", method: "POST", url: adm + "/admin/v1/import?dry_run=true", body: `{"popups":[{"name":"openapi-imported"},{"name":"openapi-other","priority":3}]}`, header: auth, want: []int{ok}},
		{name: "import", method: "POST", url: adm + "/admin/v1/import", body: `{"popups":[{"name":"openapi-imported"}]}`, header: auth, want: []int{ok}},
		{name: "import invalid", method: "POST", url: adm + "/admin/v1/import", body: `{"popups":[{"name":"x","status":"live"},{"title":"no name"}]}`, header: auth, want: []int{bad}, errCode: "validation_failed"},
		{name: "import a name twice", method: "POST", url: adm + "/admin/v1/import", body: `{"popups":[{"name":"x"},{"name":"x"}]}`, header: auth, want: []int{bad}, errCode: "validation_failed"},
		{name: "import without popups", method: "POST", url: adm + "/admin/v1/import", body: `{}`, header: auth, want: []int{bad}, errCode: "invalid_json"},
		{name: "import dry_run=maybe", method: "POST", url: adm + "/admin/v1/import?dry_run=maybe", body: `{"popups":[]}`, header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "import body over 64 MiB", method: "POST", url: adm + "/admin/v1/import", body: `{"popups":[{"name":"` + strings.Repeat("x", 64<<20) + `"}]}`, header: auth, want: []int{tooLarge}},
		{name: "GET import", method: "GET", url: adm + "/admin/v1/import", header: auth, want: []int{noMethod}},
		{name: "draft preview", method: "POST", url: adm + "/admin/v1/preview", header: auth, want: []int{ok},
			body: `{"uid":"oa-1","platform":"ios","app_version":"8.10.0","region":"cn","lang":"zh","popup":{"name":"draft","priority":1000,"title":"d"}}`},
		{name: "draft preview of an edit", method: "POST", url: adm + "/admin/v1/preview", header: auth, want: []int{ok},
			body: `{"uid":"oa-1","platform":"ios","app_version":"8.10.0","popup":` + string(stored) + `}`},
		{name: "draft preview with a bad draft", method: "POST", url: adm + "/admin/v1/preview", header: auth, want: []int{bad}, errCode: "validation_failed",
			body: `{"uid":"oa-1","platform":"ios","app_version":"8.10.0","popup":{"name":"d","targeting":{"rollout_percent":101}}}`},
		{name: "draft preview with a bad uid", method: "POST", url: adm + "/admin/v1/preview", header: auth, want: []int{bad}, errCode: "invalid_uid",
			body: `{"uid":"a b","platform":"ios","app_version":"8.10.0","popup":{"name":"d"}}`},
		{name: "draft preview body over 1 MiB", method: "POST", url: adm + "/admin/v1/preview", header: auth, want: []int{tooLarge},
			body: `{"uid":"oa-1","platform":"ios","app_version":"1","popup":` + huge + `}`},

		// admin: the rest
		{name: "preview", method: "GET", url: adm + "/admin/v1/preview?uid=oa-1&platform=ios&app_version=8.10.0", header: auth, want: []int{ok}},
		{name: "preview for a new user", method: "GET", url: adm + "/admin/v1/preview?uid=oa-new&platform=android&app_version=1&region=cn&lang=zh", header: auth, want: []int{ok}},
		{name: "preview bad platform", method: "GET", url: adm + "/admin/v1/preview?uid=oa-1&platform=bb&app_version=1", header: auth, want: []int{bad}},
		{name: "user state", method: "GET", url: adm + "/admin/v1/users/oa-1/state", header: auth, want: []int{ok}},
		{name: "user state of nobody", method: "GET", url: adm + "/admin/v1/users/oa-nobody/state", header: auth, want: []int{ok}},
		{name: "user state bad uid", method: "GET", url: adm + "/admin/v1/users/" + url.PathEscape("a b") + "/state", header: auth, want: []int{bad}},
		{name: "cache reload", method: "POST", url: adm + "/admin/v1/cache/reload", header: auth, want: []int{ok}},
		{name: "GET cache reload", method: "GET", url: adm + "/admin/v1/cache/reload", header: auth, want: []int{noMethod}},
		{name: "metrics", method: "GET", url: adm + "/metrics", header: auth, want: []int{ok}},
		{name: "pprof index", method: "GET", url: adm + "/debug/pprof/", header: auth, want: []int{ok}},

		// admin: roles
		{name: "me", method: "GET", url: adm + "/admin/v1/me", header: auth, want: []int{ok}},
		{name: "me, an editor", method: "GET", url: adm + "/admin/v1/me", header: editor, want: []int{ok}},
		{name: "me without token", method: "GET", url: adm + "/admin/v1/me", want: []int{unauth}},
		{name: "POST me", method: "POST", url: adm + "/admin/v1/me", header: auth, want: []int{noMethod}},
		{name: "operators", method: "GET", url: adm + "/admin/v1/operators", header: auth, want: []int{ok}},
		{name: "operators, an editor", method: "GET", url: adm + "/admin/v1/operators", header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "editor creates a draft", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"openapi-editor-draft","status":"draft"}`, header: editor, want: []int{created}},
		{name: "editor creates an active popup", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"openapi-editor-live"}`, header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "viewer creates a draft", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"openapi-viewer-draft","status":"draft"}`, header: viewer, want: []int{forbidden}, errCode: "forbidden"},
		{name: "editor edits a live popup", method: "PUT", url: adm + "/admin/v1/popups/" + active, body: `{"name":"openapi-active"}`, header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "editor archives", method: "DELETE", url: adm + "/admin/v1/popups/" + active, header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "editor rolls back", method: "POST", url: adm + "/admin/v1/popups/" + active + "/rollback", body: `{"revision":1}`, header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "editor imports", method: "POST", url: adm + "/admin/v1/import", body: `{"popups":[]}`, header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "editor dry-runs an import", method: "POST", url: adm + "/admin/v1/import?dry_run=true", body: `{"popups":[]}`, header: editor, want: []int{ok}},
		{name: "editor reloads the cache", method: "POST", url: adm + "/admin/v1/cache/reload", header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "editor profiles", method: "GET", url: adm + "/debug/pprof/", header: editor, want: []int{forbidden}, errCode: "forbidden"},
		{name: "viewer reads the audit log", method: "GET", url: adm + "/admin/v1/audit", header: viewer, want: []int{ok}},
		{name: "viewer reads metrics", method: "GET", url: adm + "/metrics", header: viewer, want: []int{ok}},

		// admin: stats
		{name: "stats of a popup", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats", header: auth, want: []int{ok}},
		{name: "stats of a range", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats?from=2026-11-01&to=2026-11-22", header: auth, want: []int{ok}},
		{name: "stats of an archived popup", method: "GET", url: adm + "/admin/v1/popups/" + archived + "/stats", header: auth, want: []int{ok}},
		{name: "stats bad from", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats?from=11/01/2026", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "stats from after to", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats?from=2026-11-02&to=2026-11-01", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "stats of an unknown popup", method: "GET", url: adm + "/admin/v1/popups/999999999/stats", header: auth, want: []int{notFound}, errCode: "popup_not_found"},
		{name: "stats popup id not a number", method: "GET", url: adm + "/admin/v1/popups/abc/stats", header: auth, want: []int{bad}, errCode: "invalid_popup_id"},
		{name: "stats without token", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats", want: []int{unauth}},
		{name: "POST stats", method: "POST", url: adm + "/admin/v1/popups/" + active + "/stats", header: auth, want: []int{noMethod}},
		{name: "all stats", method: "GET", url: adm + "/admin/v1/stats", header: auth, want: []int{ok}},
		{name: "stats in Los Angeles days", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats?tz=America/Los_Angeles", header: auth, want: []int{ok}},
		{name: "stats in Kathmandu days", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats?tz=Asia/Kathmandu&from=2026-11-01&to=2026-11-22", header: auth, want: []int{ok}},
		{name: "stats bad tz", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats?tz=Mars/Olympus", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "stats as CSV", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats.csv?tz=America/Los_Angeles", header: auth, want: []int{ok}},
		{name: "stats as CSV bad date", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats.csv?from=1.1.2026", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "stats as CSV of an unknown popup", method: "GET", url: adm + "/admin/v1/popups/999999999/stats.csv", header: auth, want: []int{notFound}, errCode: "popup_not_found"},
		{name: "all stats in Kathmandu days", method: "GET", url: adm + "/admin/v1/stats?tz=Asia/Kathmandu&days=true", header: auth, want: []int{ok}},
		{name: "all stats bad tz", method: "GET", url: adm + "/admin/v1/stats?tz=Local", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "settings", method: "GET", url: adm + "/admin/v1/settings", header: auth, want: []int{ok}},
		{name: "status", method: "GET", url: adm + "/admin/v1/status", header: auth, want: []int{ok}},
		{name: "set the reporting time zone", method: "PUT", url: adm + "/admin/v1/settings", body: `{"reporting_time_zone":"America/Los_Angeles"}`, header: auth, want: []int{ok}},
		{name: "stats in the reporting time zone", method: "GET", url: adm + "/admin/v1/popups/" + active + "/stats", header: auth, want: []int{ok}},
		{name: "set a time zone that is none", method: "PUT", url: adm + "/admin/v1/settings", body: `{"reporting_time_zone":"PST8"}`, header: auth, want: []int{bad}, errCode: "validation_failed"},
		{name: "set an unknown setting", method: "PUT", url: adm + "/admin/v1/settings", body: `{"reporting_time_zone":"UTC","colour":"red"}`, header: auth, want: []int{bad}, errCode: "validation_failed"},
		{name: "settings not JSON", method: "PUT", url: adm + "/admin/v1/settings", body: `[`, header: auth, want: []int{bad}, errCode: "invalid_json"},
		{name: "settings without token", method: "GET", url: adm + "/admin/v1/settings", want: []int{unauth}},
		{name: "POST settings", method: "POST", url: adm + "/admin/v1/settings", header: auth, want: []int{noMethod}},
		{name: "all stats with days", method: "GET", url: adm + "/admin/v1/stats?days=true&from=2026-11-20", header: auth, want: []int{ok}},
		{name: "all stats over 366 days", method: "GET", url: adm + "/admin/v1/stats?from=2020-01-01&to=2026-01-01", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "all stats bad days", method: "GET", url: adm + "/admin/v1/stats?days=2", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "all stats without token", method: "GET", url: adm + "/admin/v1/stats", want: []int{unauth}},
		{name: "DELETE all stats", method: "DELETE", url: adm + "/admin/v1/stats", header: auth, want: []int{noMethod}},
		// admin: experiment results
		{name: "experiment results", method: "GET", url: adm + "/admin/v1/popups/" + experimented + "/experiment/results", header: viewer, want: []int{ok}},
		{name: "experiment results of phase 1", method: "GET", url: adm + "/admin/v1/popups/" + experimented + "/experiment/results?phase=1", header: auth, want: []int{ok}},
		{name: "experiment results of a later phase", method: "GET", url: adm + "/admin/v1/popups/" + experimented + "/experiment/results?phase=2", header: auth, want: []int{notFound}, errCode: "phase_not_found"},
		{name: "experiment results bad phase", method: "GET", url: adm + "/admin/v1/popups/" + experimented + "/experiment/results?phase=0", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "experiment results phase not a number", method: "GET", url: adm + "/admin/v1/popups/" + experimented + "/experiment/results?phase=one", header: auth, want: []int{bad}, errCode: "invalid_query"},
		{name: "experiment results without an experiment", method: "GET", url: adm + "/admin/v1/popups/" + active + "/experiment/results", header: auth, want: []int{notFound}, errCode: "experiment_missing"},
		{name: "experiment results of an unknown popup", method: "GET", url: adm + "/admin/v1/popups/999999999/experiment/results", header: auth, want: []int{notFound}, errCode: "popup_not_found"},
		{name: "experiment results without token", method: "GET", url: adm + "/admin/v1/popups/" + experimented + "/experiment/results", want: []int{unauth}},
		{name: "POST experiment results", method: "POST", url: adm + "/admin/v1/popups/" + experimented + "/experiment/results", header: auth, want: []int{noMethod}},
		{name: "experiment reassignment", method: "POST", url: adm + "/admin/v1/popups/" + experimented + "/experiment/reassignment", header: viewer, want: []int{ok},
			body: `{"popup":{"name":"x","experiment":{"variants":[{"key":"a","weight":20},{"key":"b","weight":60}],"control":{"weight":20,"mode":"none"}}}}`},
		{name: "experiment reassignment without an experiment", method: "POST", url: adm + "/admin/v1/popups/" + experimented + "/experiment/reassignment", header: auth, want: []int{bad}, errCode: "validation_failed",
			body: `{"popup":{"name":"x"}}`},
		{name: "experiment reassignment of a popup without one", method: "POST", url: adm + "/admin/v1/popups/" + active + "/experiment/reassignment", header: auth, want: []int{notFound}, errCode: "experiment_missing",
			body: `{"popup":{"name":"x"}}`},
		{name: "GET experiment reassignment", method: "GET", url: adm + "/admin/v1/popups/" + experimented + "/experiment/reassignment", header: auth, want: []int{noMethod}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) { s.do(t, c) })
	}

	t.Run("an error reply names the field", func(t *testing.T) {
		_, body, _ := s.do(t, call{method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"x","targeting":{"rollout_percent":101}}`,
			header: auth, want: []int{bad}})
		assert.Contains(t, string(body), `"field":"targeting.rollout_percent"`)
	})
	t.Run("the admin 401 carries a challenge", func(t *testing.T) {
		_, _, h := s.do(t, call{method: "GET", url: adm + "/admin/v1/popups", want: []int{unauth}})
		assert.NotEmpty(t, h.Get("WWW-Authenticate"))
	})
	t.Run("the 429 says when to retry", func(t *testing.T) {
		_, _, h := s.do(t, call{method: "POST", url: spub + "/api/v1/popups/" + strictID + "/actions",
			body: `{"uid":"oa-4","action":"close"}`, header: sig("oa-4"), want: []int{tooMany}})
		assert.NotEmpty(t, h.Get("Retry-After"))
	})
}

// TestResponsesMatchOpenAPIWithDependenciesDown validates the answers of every route while MySQL,
// then Redis, is unreachable (a proxy in front of each refuses connections): the degraded GET,
// the 503s with Retry-After, readiness.
func TestResponsesMatchOpenAPIWithDependenciesDown(t *testing.T) {
	t.Parallel()
	testenv.SingleNodeRedis(t) // the fault proxy stands in front of one node
	cfg := testConfig(t)
	dsn, err := mysql.ParseDSN(cfg.MySQLDSN)
	require.NoError(t, err)
	mysqlProxy := testenv.NewProxy(t, dsn.Addr)
	dsn.Addr = mysqlProxy.Addr()
	cfg.MySQLDSN = dsn.FormatDSN()
	redisProxy := testenv.NewProxy(t, cfg.RedisAddr)
	cfg.RedisAddr = redisProxy.Addr()
	api := start(t, cfg, nil)

	s := newSpecChecker(t, api.public, api.admin)
	pub, adm := "http://"+api.public, "http://"+api.admin
	auth := map[string]string{"Authorization": "Bearer " + token}
	_, body, _ := s.do(t, call{method: http.MethodPost, url: adm + "/admin/v1/popups", body: `{"name":"openapi-down"}`, header: auth, want: []int{http.StatusCreated}})
	var p struct{ ID int64 }
	require.NoError(t, json.Unmarshal(body, &p), "%s", body)
	id := itoa(p.ID)
	api.WaitServed(t, id)

	const (
		ok, accepted, unavailable = http.StatusOK, http.StatusAccepted, http.StatusServiceUnavailable
	)
	// Routes that need MySQL answer 503 + Retry-After; the homepage and warm users do not need it.
	mysqlDown := []call{
		{name: "list", method: "GET", url: adm + "/admin/v1/popups", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "get", method: "GET", url: adm + "/admin/v1/popups/" + id, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "create", method: "POST", url: adm + "/admin/v1/popups", body: `{"name":"x"}`, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "put", method: "PUT", url: adm + "/admin/v1/popups/" + id, body: `{"name":"x"}`, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "delete", method: "DELETE", url: adm + "/admin/v1/popups/" + id, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "cache reload", method: "POST", url: adm + "/admin/v1/cache/reload", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "history", method: "GET", url: adm + "/admin/v1/popups/" + id + "/history", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "rollback", method: "POST", url: adm + "/admin/v1/popups/" + id + "/rollback", body: `{"revision":1}`, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "experiment start", method: "POST", url: adm + "/admin/v1/popups/" + id + "/experiment/start", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "experiment conclude", method: "POST", url: adm + "/admin/v1/popups/" + id + "/experiment/conclude", body: `{"variant":"a"}`, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "audit", method: "GET", url: adm + "/admin/v1/audit", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "audit changes", method: "GET", url: adm + "/admin/v1/audit/changes?resource=settings", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "export", method: "GET", url: adm + "/admin/v1/export", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "import", method: "POST", url: adm + "/admin/v1/import", body: `{"popups":[{"name":"x"}]}`, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "stats", method: "GET", url: adm + "/admin/v1/popups/" + id + "/stats", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "experiment results", method: "GET", url: adm + "/admin/v1/popups/" + id + "/experiment/results", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "all stats", method: "GET", url: adm + "/admin/v1/stats", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "stats as CSV", method: "GET", url: adm + "/admin/v1/popups/" + id + "/stats.csv", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "settings", method: "GET", url: adm + "/admin/v1/settings", header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "set settings", method: "PUT", url: adm + "/admin/v1/settings", body: `{"reporting_time_zone":"UTC"}`, header: auth, want: []int{unavailable}, errCode: "mysql_unavailable"},
		{name: "decision", method: "GET", url: pub + "/api/v1/popup?uid=down-1&platform=ios&app_version=1", want: []int{ok}},
		{name: "action", method: "POST", url: pub + "/api/v1/popups/" + id + "/actions", body: `{"uid":"down-1","action":"close"}`, want: []int{accepted}},
		{name: "readyz", method: "GET", url: pub + "/readyz", want: []int{ok}},
		{name: "status", method: "GET", url: adm + "/admin/v1/status", header: auth, want: []int{ok}},
		{name: "action of a cold user", method: "POST", url: pub + "/api/v1/popups/" + id + "/actions", body: `{"uid":"down-cold","action":"close"}`, want: []int{unavailable}},
	}
	// down-1 is a warm user (Redis holds its state): it needs no MySQL. A user Redis knows
	// nothing about needs MySQL once, and its action is a 503 while MySQL is down.
	s.do(t, call{method: "GET", url: pub + "/api/v1/popup?uid=down-1&platform=ios&app_version=1", want: []int{ok}})
	mysqlProxy.SetDown(true)
	for _, c := range mysqlDown {
		t.Run("mysql down/"+c.name, func(t *testing.T) {
			status, _, h := s.do(t, c)
			if status == unavailable {
				assert.NotEmpty(t, h.Get("Retry-After"), "a 503 says when to retry")
			}
		})
	}
	mysqlProxy.SetDown(false)

	redisDown := []call{
		{name: "decision", method: "GET", url: pub + "/api/v1/popup?uid=down-2&platform=ios&app_version=1", want: []int{ok}},
		{name: "action", method: "POST", url: pub + "/api/v1/popups/" + id + "/actions", body: `{"uid":"down-2","action":"click"}`, want: []int{unavailable}},
		// readiness never follows Redis: a Redis outage must not empty the load balancer
		{name: "readyz", method: "GET", url: pub + "/readyz", want: []int{ok}},
		{name: "healthz", method: "GET", url: pub + "/healthz", want: []int{ok}},
		{name: "status", method: "GET", url: adm + "/admin/v1/status", header: auth, want: []int{ok}},
		{name: "user state", method: "GET", url: adm + "/admin/v1/users/down-2/state", header: auth, want: []int{unavailable}},
		{name: "preview", method: "GET", url: adm + "/admin/v1/preview?uid=down-2&platform=ios&app_version=1", header: auth, want: []int{unavailable}},
		{name: "draft preview", method: "POST", url: adm + "/admin/v1/preview", header: auth, want: []int{unavailable},
			body: `{"uid":"down-2","platform":"ios","app_version":"1","popup":{"name":"d"}}`},
	}
	redisProxy.SetDown(true)
	for _, c := range redisDown {
		t.Run("redis down/"+c.name, func(t *testing.T) {
			status, _, h := s.do(t, c)
			switch {
			case c.name == "decision":
				assert.Equal(t, "1", h.Get("X-Popup-Degraded"), "the answer without Redis is the degraded one")
			case status == unavailable && c.name != "readyz":
				assert.NotEmpty(t, h.Get("Retry-After"), "a 503 says when to retry")
			}
		})
	}
	redisProxy.SetDown(false)
}
