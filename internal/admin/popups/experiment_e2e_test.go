package popups_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// expClient sends the admin requests of the experiment tests through the OpenAPI checker, so
// every answer is also checked against api/openapi.yaml.
type expClient struct {
	s   *apitest.SpecChecker
	adm string
}

type expAnswer struct {
	status int
	body   map[string]any
	raw    string
	etag   string
}

func (c expClient) do(t *testing.T, method, path, body string, header map[string]string, want int) expAnswer {
	t.Helper()
	a := apitest.AdminClient{Spec: c.s, Base: c.adm}.Do(t, method, path, body, header, want)
	return expAnswer{status: a.Status, body: a.Body, raw: a.Raw, etag: a.ETag}
}

// experimentOf is the experiment of a popup answer.
func experimentOf(t *testing.T, a expAnswer) map[string]any {
	t.Helper()
	e, ok := a.body["experiment"].(map[string]any)
	require.True(t, ok, "no experiment in %s", a.raw)
	return e
}

// errorOf is an error answer's code and its first field ("" for none).
func (a expAnswer) errorOf(t *testing.T) (code, field string) {
	t.Helper()
	return apitest.ErrorOf(t, apitest.Response{Status: a.status, Body: a.body, Raw: a.raw})
}

const expBody = `{"name":%q,"status":%q,"title":"own","link_url":"https://example.com/own","experiment":{
	"variants":[
		{"key":"a","weight":40,"title":"A"},
		{"key":"b","weight":40,"title":"B","content":"b content","link_url":"https://example.com/b","buttons":[{"text":"Go","link_url":"https://example.com/go"}],"ext":{"k":"b"}}],
	"control":{"weight":20},"planned_end_at":"2026-12-09T00:00:00+01:00"}}`

func expPopup(name, status string) string {
	return strings.Replace(strings.Replace(expBody, "%q", `"`+name+`"`, 1), "%q", `"`+status+`"`, 1)
}

// withExperimentEdit is the popup answer a, with edit applied to its experiment, as a PUT body.
func withExperimentEdit(t *testing.T, a expAnswer, edit func(e map[string]any)) string {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(a.raw), &p))
	edit(p["experiment"].(map[string]any))
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	return string(raw)
}

// withoutExperiment is the popup answer a with "experiment": null, as a PUT body.
func withoutExperiment(t *testing.T, a expAnswer) string {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(a.raw), &p))
	p["experiment"] = nil
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	return string(raw)
}

func setWeights(ws ...float64) func(map[string]any) {
	return func(e map[string]any) {
		vs := e["variants"].([]any)
		for i, w := range ws {
			vs[i].(map[string]any)["weight"] = w
		}
	}
}

// TestExperimentAdminLifecycle drives one popup's experiment through the admin API of a real
// popup-api on MariaDB and Redis: create, the phase rules of PUT, the transitions and their
// refusals, history and rollback, export and import, the audit log and the draft preview.
func TestExperimentAdminLifecycle(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	cfg.AdminTokens = []string{"ed@editor:tok-editor"}
	api := apitest.Start(t, cfg, apitest.NewClock())
	c := expClient{s: apitest.NewSpecChecker(t, api.Public, api.Admin), adm: "http://" + api.Admin}
	editor := func() map[string]string { return map[string]string{"Authorization": "Bearer tok-editor"} }
	ifMatch := func(etag string) map[string]string { return map[string]string{"If-Match": etag} }

	created := c.do(t, "POST", "/admin/v1/popups", expPopup("exp-live", "active"), nil, http.StatusCreated)
	id := apitest.Itoa(int64(created.body["id"].(float64)))
	e := experimentOf(t, created)
	assert.Equal(t, "draft", e["status"])
	assert.Equal(t, 1.0, e["phase"])
	assert.Len(t, e["salt"], 16)
	assert.Nil(t, e["phase_started_at"])
	assert.Nil(t, e["concluded_variant"])
	assert.Equal(t, 100.0, e["coverage_percent"], "the default")
	assert.Equal(t, "2026-12-08T23:00:00Z", e["planned_end_at"], "in UTC")
	assert.Equal(t, map[string]any{"weight": 20.0, "mode": "none"}, e["control"])
	salt1 := e["salt"]

	got := c.do(t, "GET", "/admin/v1/popups/"+id, "", nil, http.StatusOK)
	assert.Equal(t, created.body["experiment"], got.body["experiment"], "read back as written")

	t.Run("bad experiments are 400s naming the field", func(t *testing.T) {
		a := c.do(t, "POST", "/admin/v1/popups", `{"name":"x","experiment":{"variants":[{"key":"a","weight":50,"colour":1}]}}`, nil, http.StatusBadRequest)
		code, field := a.errorOf(t)
		assert.Equal(t, "invalid_json", code)
		assert.Equal(t, "experiment.variants[0].colour", field)
		a = c.do(t, "POST", "/admin/v1/popups", `{"name":"x","experiment":{"variants":[{"key":"a","weight":50},{"key":"b","weight":50,"link_url":"ftp://x"}]}}`, nil, http.StatusBadRequest)
		code, field = a.errorOf(t)
		assert.Equal(t, "validation_failed", code)
		assert.Equal(t, "experiment.variants[1].link_url", field)
		a = c.do(t, "PUT", "/admin/v1/popups/"+id+"?accept_reassignment=maybe", got.raw, nil, http.StatusBadRequest)
		code, field = a.errorOf(t)
		assert.Equal(t, "invalid_query", code)
		assert.Equal(t, "accept_reassignment", field)
	})

	// Start: If-Match honoured, the phase starts at the server's clock.
	c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", ifMatch(`"99"`), http.StatusPreconditionFailed)
	c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", editor(), http.StatusForbidden)
	started := c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", ifMatch(got.etag), http.StatusOK)
	assert.NotEqual(t, got.etag, started.etag)
	e = experimentOf(t, started)
	assert.Equal(t, "running", e["status"])
	assert.Equal(t, "2026-11-22T10:00:00Z", e["phase_started_at"])
	a := c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", nil, http.StatusConflict)
	code, _ := a.errorOf(t)
	assert.Equal(t, "experiment_state", code)

	// Coverage only, with the server-managed fields forged: the same phase and salt, still running.
	put := c.do(t, "PUT", "/admin/v1/popups/"+id, withExperimentEdit(t, started, func(e map[string]any) {
		e["coverage_percent"], e["status"], e["phase"], e["salt"], e["concluded_variant"] = 50, "concluded", 7, "forged", "a"
	}), nil, http.StatusOK)
	e = experimentOf(t, put)
	assert.Equal(t, []any{50.0, "running", 1.0, salt1, nil}, []any{e["coverage_percent"], e["status"], e["phase"], e["salt"], e["concluded_variant"]})

	// Weights accepted: the same phase, audited as reassign.
	put = c.do(t, "PUT", "/admin/v1/popups/"+id+"?accept_reassignment=true", withExperimentEdit(t, put, setWeights(30, 50)), nil, http.StatusOK)
	e = experimentOf(t, put)
	assert.Equal(t, []any{1.0, salt1}, []any{e["phase"], e["salt"]})
	audit := c.do(t, "GET", "/admin/v1/audit?popup_id="+id+"&limit=1", "", nil, http.StatusOK)
	assert.Equal(t, "reassign", audit.body["entries"].([]any)[0].(map[string]any)["action"])

	// Weights not accepted: phase 2 with a new salt.
	put = c.do(t, "PUT", "/admin/v1/popups/"+id, withExperimentEdit(t, put, setWeights(20, 60)), nil, http.StatusOK)
	e = experimentOf(t, put)
	assert.Equal(t, 2.0, e["phase"])
	assert.NotEqual(t, salt1, e["salt"])

	// The same PUT again writes nothing.
	same := c.do(t, "PUT", "/admin/v1/popups/"+id, put.raw, nil, http.StatusOK)
	assert.Equal(t, put.etag, same.etag)

	// A running experiment cannot be removed; a stopped one can stop no more.
	a = c.do(t, "PUT", "/admin/v1/popups/"+id, withoutExperiment(t, put), nil, http.StatusConflict)
	code, field := a.errorOf(t)
	assert.Equal(t, []string{"experiment_running", "experiment"}, []string{code, field})
	stopped := c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/stop", "", nil, http.StatusOK)
	assert.Equal(t, "stopped", experimentOf(t, stopped)["status"])
	a = c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/stop", "", nil, http.StatusConflict)
	code, _ = a.errorOf(t)
	assert.Equal(t, "experiment_state", code)

	// Conclude: the variant must be one of them; its content becomes the popup's.
	for _, body := range []string{`{"variant":"control"}`, `{"variant":"zz"}`, `{}`, `{"variant":"b","colour":1}`} {
		a = c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/conclude", body, nil, http.StatusBadRequest)
		if !strings.Contains(body, "colour") {
			_, field = a.errorOf(t)
			assert.Equal(t, "variant", field, body)
		}
	}
	concluded := c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/conclude", `{"variant":"b"}`, ifMatch(stopped.etag), http.StatusOK)
	e = experimentOf(t, concluded)
	assert.Equal(t, []any{"concluded", "b"}, []any{e["status"], e["concluded_variant"]})
	assert.Equal(t, []any{"B", "b content", "https://example.com/b", map[string]any{"k": "b"}},
		[]any{concluded.body["title"], concluded.body["content"], concluded.body["link_url"], concluded.body["ext"]})
	a = c.do(t, "PUT", "/admin/v1/popups/"+id, withExperimentEdit(t, concluded, func(e map[string]any) { e["coverage_percent"] = 10 }), nil, http.StatusConflict)
	code, _ = a.errorOf(t)
	assert.Equal(t, "experiment_concluded", code)
	a = c.do(t, "POST", "/admin/v1/popups/"+id+"/experiment/start", "", nil, http.StatusConflict)
	code, _ = a.errorOf(t)
	assert.Equal(t, "experiment_concluded", code)

	audit = c.do(t, "GET", "/admin/v1/audit?popup_id="+id, "", nil, http.StatusOK)
	var actions []string
	for _, en := range audit.body["entries"].([]any) {
		actions = append(actions, en.(map[string]any)["action"].(string))
	}
	assert.Equal(t, []string{"experiment_conclude", "experiment_stop", "update", "reassign", "update", "experiment_start", "create"}, actions)

	t.Run("history and rollback restore the experiment", func(t *testing.T) {
		hist := c.do(t, "GET", "/admin/v1/popups/"+id+"/history", "", nil, http.StatusOK)
		revs := hist.body["revisions"].([]any)
		first := revs[len(revs)-1].(map[string]any)["popup"].(map[string]any)
		assert.Equal(t, created.body["experiment"], first["experiment"])
		a := c.do(t, "POST", "/admin/v1/popups/"+id+"/rollback", `{"revision":1}`, nil, http.StatusConflict)
		code, _ := a.errorOf(t)
		// revision 1 holds the popup's own content from before the conclude: the rollback would
		// take the shipped variant off the air while the experiment says it shipped (issue 41, 2)
		assert.Equal(t, "experiment_shipped", code, "a rollback past the conclude is refused unless it ends the experiment")
		removed := c.do(t, "PUT", "/admin/v1/popups/"+id, withoutExperiment(t, concluded), nil, http.StatusOK)
		assert.Nil(t, removed.body["experiment"], "a concluded experiment can be removed")
		back := c.do(t, "POST", "/admin/v1/popups/"+id+"/rollback", `{"revision":1}`, nil, http.StatusOK)
		e := experimentOf(t, back)
		assert.Equal(t, experimentOf(t, created)["variants"], e["variants"])
		assert.Equal(t, []any{"draft", 1.0}, []any{e["status"], e["phase"]}, "back as a new experiment")
	})

	t.Run("transitions of a popup without an experiment, or of none", func(t *testing.T) {
		bare := c.do(t, "POST", "/admin/v1/popups", `{"name":"exp-bare"}`, nil, http.StatusCreated)
		a := c.do(t, "POST", "/admin/v1/popups/"+apitest.Itoa(int64(bare.body["id"].(float64)))+"/experiment/stop", "", nil, http.StatusConflict)
		code, _ := a.errorOf(t)
		assert.Equal(t, "experiment_missing", code)
		c.do(t, "POST", "/admin/v1/popups/999999999/experiment/start", "", nil, http.StatusNotFound)
		c.do(t, "POST", "/admin/v1/popups/abc/experiment/start", "", nil, http.StatusBadRequest)
		c.do(t, "GET", "/admin/v1/popups/"+id+"/experiment/start", "", nil, http.StatusMethodNotAllowed)
	})

	t.Run("an editor runs a draft's experiment, not a live one's", func(t *testing.T) {
		draft := c.do(t, "POST", "/admin/v1/popups", expPopup("exp-draft", "draft"), editor(), http.StatusCreated)
		did := apitest.Itoa(int64(draft.body["id"].(float64)))
		c.do(t, "POST", "/admin/v1/popups/"+did+"/experiment/start", "", editor(), http.StatusOK)
		c.do(t, "POST", "/admin/v1/popups/"+did+"/experiment/stop", "", editor(), http.StatusOK)
		c.do(t, "POST", "/admin/v1/popups/"+did+"/experiment/conclude", `{"variant":"a"}`, editor(), http.StatusOK)
		live := c.do(t, "POST", "/admin/v1/popups", expPopup("exp-live-2", "active"), nil, http.StatusCreated)
		a := c.do(t, "POST", "/admin/v1/popups/"+apitest.Itoa(int64(live.body["id"].(float64)))+"/experiment/start", "", editor(), http.StatusForbidden)
		assert.Equal(t, "publisher", a.body["error"].(map[string]any)["role_needed"])
	})

	t.Run("export and import round-trip", func(t *testing.T) {
		exported := c.do(t, "GET", "/admin/v1/export", "", nil, http.StatusOK)
		assert.Contains(t, exported.raw, `"experiment":{`)
		res := c.do(t, "POST", "/admin/v1/import", exported.raw, nil, http.StatusOK)
		assert.Equal(t, 0.0, res.body["created"])
		assert.Equal(t, 0.0, res.body["updated"], "nothing changed")
	})

	t.Run("the draft preview takes an experiment", func(t *testing.T) {
		c.do(t, "POST", "/admin/v1/preview", `{"uid":"u1","platform":"ios","app_version":"8.10.0","popup":`+expPopup("preview", "draft")+`}`, nil, http.StatusOK)
		a := c.do(t, "POST", "/admin/v1/preview", `{"uid":"u1","platform":"ios","app_version":"8.10.0","popup":{"name":"p","experiment":{"variants":[{"key":"a","weight":90}]}}}`, nil, http.StatusBadRequest)
		_, field := a.errorOf(t)
		assert.Equal(t, "popup.experiment.variants", field)
	})
}

// TestExperimentTransitionsNeedWhatAPutNeeds: each role's answer to each transition, of a draft
// and of a live popup, as docs/CONTRACT.md §9 has it (editor for a draft, publisher otherwise);
// a refused transition writes nothing.
func TestExperimentTransitionsNeedWhatAPutNeeds(t *testing.T) {
	t.Parallel()
	api, cfg := apitest.StartWithRoles(t)
	db := apitest.DB(t, cfg)
	counts := func() apitest.WriteCounts { return apitest.PopupWriteCounts(t, db) }
	// Each kind makes its popup (by the admin), brings its experiment where the transition
	// applies, and names the transition.
	type kind struct {
		name, status, setUp, transition, body string
	}
	kinds := []kind{
		{"start a draft's", "draft", "", "start", ""},
		{"stop a draft's", "draft", "start", "stop", ""},
		{"conclude a draft's", "draft", "start", "conclude", `{"variant":"a"}`},
		{"start a live popup's", "active", "", "start", ""},
		{"stop a live popup's", "active", "start", "stop", ""},
		{"conclude a paused popup's", "paused", "start", "conclude", `{"variant":"b"}`},
	}
	// want is each role's answer to each kind, in the order of kinds: 200, or the role a 403 names.
	want := map[string][]string{
		"viewer":    {"editor", "editor", "editor", "editor", "editor", "editor"},
		"editor":    {"200", "200", "200", "publisher", "publisher", "publisher"},
		"publisher": {"200", "200", "200", "200", "200", "200"},
		"admin":     {"200", "200", "200", "200", "200", "200"},
	}
	for _, role := range []string{"viewer", "editor", "publisher", "admin"} {
		for i, k := range kinds {
			t.Run(role+" "+k.name, func(t *testing.T) {
				name := strings.ReplaceAll("roles "+role+" "+k.name, " ", "-")
				var p map[string]any
				require.NoError(t, json.Unmarshal([]byte(expPopup(name, k.status)), &p))
				id := apitest.Itoa(api.CreatePopup(t, p))
				if k.setUp != "" {
					res := api.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+id+"/experiment/"+k.setUp, nil)
					require.Equal(t, http.StatusOK, res.Status, res.Raw)
				}
				before := counts()
				var body any
				if k.body != "" {
					body = k.body
				}
				res := api.As(t, apitest.RoleTokens[role], http.MethodPost, "/admin/v1/popups/"+id+"/experiment/"+k.transition, body, nil)
				if want[role][i] == "200" {
					require.Equal(t, http.StatusOK, res.Status, res.Raw)
					return
				}
				require.Equal(t, http.StatusForbidden, res.Status, res.Raw)
				assert.Equal(t, want[role][i], res.Body["error"].(map[string]any)["role_needed"])
				assert.Equal(t, before, counts(), "a refused transition writes nothing")
			})
		}
	}
}
