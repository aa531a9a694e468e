package audiences_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// Audiences through the admin HTTP API against the real MariaDB and Redis (docs/CONTRACT.md §11):
// member writes in both formats, their refusals (each of which changes nothing), roles, the list
// streamed back, and popups that name audiences.

func TestAudienceMemberWritesRoundTrip(t *testing.T) {
	t.Parallel()
	api := apitest.StartAudiences(t)
	id := api.CreateAudience(t, "vips")
	base := "/admin/v1/audiences/" + id

	steps := []struct {
		name, method, path, ctype, body string
		wantLines, wantAdded, wantRm    int64
		wantSize                        int64
	}{
		{name: "replace, text with a repeat, CRLF and blank lines", method: "PUT", path: "/members", ctype: "text/plain",
			body: "u1\nu2\r\nu2\n\nu3\n", wantLines: 4, wantAdded: 3, wantSize: 3},
		{name: "add, CSV with quoted fields and other columns", method: "POST", path: "/members/add", ctype: "text/csv; charset=utf-8",
			body: "name,UID,note\n\"Doe, Jane\",u4,\"said \"\"hi\"\"\nthen left\"\nx,\"u5\",\nz,u1,\n", wantLines: 3, wantAdded: 2, wantSize: 5},
		{name: "remove, one member and one stranger", method: "POST", path: "/members/remove", ctype: "text/plain",
			body: "u2\nnobody\nu2", wantLines: 3, wantRm: 1, wantSize: 4},
		{name: "add again what was there and what was removed", method: "POST", path: "/members/add", ctype: "text/plain",
			body: "u2\nu3\nu2\n", wantLines: 3, wantAdded: 1, wantSize: 5},
	}
	version := int64(1)
	for _, st := range steps {
		status, body, raw := api.Send(t, "tok-editor", st.method, base+st.path, st.ctype, strings.NewReader(st.body))
		require.Equal(t, http.StatusOK, status, "%s: %s", st.name, raw)
		version++
		assert.Equal(t, st.wantLines, apitest.Num(body["lines"]), st.name)
		assert.Equal(t, st.wantAdded, apitest.Num(body["added"]), st.name)
		assert.Equal(t, st.wantRm, apitest.Num(body["removed"]), st.name)
		assert.Equal(t, st.wantSize, apitest.Num(body["size"]), st.name)
		assert.Equal(t, version, apitest.Num(body["version"]), st.name)
	}
	assert.Equal(t, []string{"u1", "u2", "u3", "u4", "u5"}, api.Members(t, id), "each member once, whatever the uploads repeated")

	for uid, want := range map[string]bool{"u4": true, "u2": true, "nobody": false} {
		status, body, raw := api.Send(t, "tok-viewer", "GET", base+"/members/"+uid, "", nil)
		require.Equal(t, http.StatusOK, status, raw)
		assert.Equal(t, want, body["member"], uid)
		assert.Equal(t, version, apitest.Num(body["version"]))
	}

	status, body, raw := api.Send(t, "tok-viewer", "GET", base+"/history", "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	var actions []string
	for _, c := range body["changes"].([]any) {
		actions = append(actions, c.(map[string]any)["action"].(string))
	}
	assert.Equal(t, []string{"add", "remove", "add", "replace", "create"}, actions, "newest first")

	// A second replace supersedes every upload so far; the list is only the new one.
	status, body, raw = api.Send(t, "tok-editor", "PUT", base+"/members", "text/plain", strings.NewReader("u9\nu1\n"))
	require.Equal(t, http.StatusOK, status, raw)
	assert.Equal(t, int64(1), apitest.Num(body["added"]))
	assert.Equal(t, int64(4), apitest.Num(body["removed"]))
	assert.Equal(t, []string{"u1", "u9"}, api.Members(t, id))
}

func TestAudienceUploadsRefusedChangeNothing(t *testing.T) {
	t.Parallel()
	api := apitest.StartAudiences(t)
	id := api.CreateAudience(t, "refusals")
	base := "/admin/v1/audiences/" + id
	status, _, raw := api.Send(t, apitest.Token, "PUT", base+"/members", "text/plain", strings.NewReader("a1\na2\n"))
	require.Equal(t, http.StatusOK, status, raw)

	var many bytes.Buffer
	for i := range 150 {
		fmt.Fprintf(&many, "ok-%d\nbad uid %d\n", i, i)
	}
	var overDelta bytes.Buffer
	for i := range 1_000_001 {
		fmt.Fprintf(&overDelta, "d%d\n", i)
	}
	var overMemory bytes.Buffer
	for i := range 20_000 {
		fmt.Fprintf(&overMemory, "m%d\n", i)
	}
	tests := []struct {
		name, method, path, ctype string
		body                      io.Reader
		header                    []string
		wantStatus                int
		wantCode                  string
		check                     func(t *testing.T, body map[string]any)
	}{
		{name: "a bad line", method: "PUT", path: "/members", ctype: "text/plain", body: strings.NewReader("a3\nnot ok\n" + strings.Repeat("x", 65) + "\n"),
			wantStatus: 400, wantCode: "invalid_members", check: func(t *testing.T, body map[string]any) {
				e := body["error"].(map[string]any)
				assert.Equal(t, int64(2), apitest.Num(e["bad_lines"]))
				lines := e["lines"].([]any)
				require.Len(t, lines, 2)
				assert.Equal(t, int64(2), apitest.Num(lines[0].(map[string]any)["line"]))
				assert.Equal(t, int64(3), apitest.Num(lines[1].(map[string]any)["line"]))
			}},
		{name: "150 bad lines name the first 100", method: "POST", path: "/members/add", ctype: "text/plain", body: &many,
			wantStatus: 400, wantCode: "invalid_members", check: func(t *testing.T, body map[string]any) {
				e := body["error"].(map[string]any)
				assert.Equal(t, int64(150), apitest.Num(e["bad_lines"]))
				assert.Len(t, e["lines"], 100)
				assert.Contains(t, e["message"], "150 bad lines")
			}},
		{name: "a CSV without a uid column", method: "PUT", path: "/members", ctype: "text/csv", body: strings.NewReader("id,name\n1,a\n"),
			wantStatus: 400, wantCode: "invalid_members"},
		{name: "a CSV with a broken quote", method: "PUT", path: "/members", ctype: "text/csv", body: strings.NewReader("uid\na1\n\"a\"2\n"),
			wantStatus: 400, wantCode: "invalid_members"},
		{name: "a stale If-Match", method: "PUT", path: "/members", ctype: "text/plain", body: strings.NewReader("a9\n"), header: []string{"If-Match", `"1"`},
			wantStatus: 412, wantCode: "precondition_failed"},
		{name: "JSON is not a member list", method: "PUT", path: "/members", ctype: "application/json", body: strings.NewReader(`["a1"]`),
			wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "no content type", method: "POST", path: "/members/add", body: strings.NewReader("a1\n"),
			wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "over a delta's million", method: "POST", path: "/members/add", ctype: "text/plain", body: &overDelta,
			wantStatus: 413, wantCode: "too_many_members", check: func(t *testing.T, body map[string]any) {
				e := body["error"].(map[string]any)
				assert.Equal(t, int64(1_000_000), apitest.Num(e["limit"]))
				assert.Contains(t, e["message"], "1000000")
			}},
		{name: "over POPUP_AUDIENCE_MEMORY", method: "PUT", path: "/members", ctype: "text/plain", body: &overMemory,
			wantStatus: 413, wantCode: "audience_memory", check: func(t *testing.T, body map[string]any) {
				assert.Contains(t, body["error"].(map[string]any)["message"], "POPUP_AUDIENCE_MEMORY")
			}},
		{name: "a viewer", method: "PUT", path: "/members", ctype: "text/plain", body: strings.NewReader("a1\n"),
			wantStatus: 403, wantCode: "forbidden"},
	}
	for _, tt := range tests {
		tok := apitest.Token
		if tt.name == "a viewer" {
			tok = "tok-viewer"
		}
		status, body, raw := api.Send(t, tok, tt.method, base+tt.path, tt.ctype, tt.body, tt.header...)
		require.Equal(t, tt.wantStatus, status, "%s: %s", tt.name, raw[:min(len(raw), 500)])
		assert.Equal(t, tt.wantCode, body["error"].(map[string]any)["code"], tt.name)
		if tt.check != nil {
			tt.check(t, body)
		}
		status, body, _ = api.Send(t, apitest.Token, "GET", base, "", nil)
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, int64(2), apitest.Num(body["version"]), "%s changes nothing", tt.name)
		assert.Equal(t, int64(2), apitest.Num(body["size"]), tt.name)
		assert.Equal(t, []string{"a1", "a2"}, api.Members(t, id), tt.name)
	}

	status, _, raw = api.Send(t, apitest.Token, "PUT", base+"/members", "text/plain", strings.NewReader("a1\n"), "If-Match", `"2"`)
	assert.Equal(t, http.StatusOK, status, "the current ETag writes: %s", raw)
}

func TestAudienceRolesAndPopupsThatUseThem(t *testing.T) {
	t.Parallel()
	api := apitest.StartAudiences(t)
	used, unused := api.CreateAudience(t, "used"), api.CreateAudience(t, "unused")
	usedID, _ := strconv.ParseInt(used, 10, 64)

	// A popup naming an audience that does not exist is refused naming the field.
	res := api.AdminDo(t, "POST", "/admin/v1/popups", apitest.PopupSpec("nowhere", map[string]any{
		"targeting": map[string]any{"audiences": map[string]any{"include": []int64{usedID}, "exclude": []int64{1 << 40}}}}))
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	assert.Equal(t, "targeting.audiences.exclude[0]", res.Body["error"].(map[string]any)["fields"].([]any)[0].(map[string]any)["field"])

	popupID := api.CreatePopup(t, apitest.PopupSpec("targeted", map[string]any{
		"targeting": map[string]any{"audiences": map[string]any{"include": []int64{usedID}}}}))
	status, body, raw := api.Send(t, "tok-viewer", "GET", "/admin/v1/audiences/"+used, "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	assert.Equal(t, []any{float64(popupID)}, body["used_by"])

	tests := []struct {
		name, tok, method, path string
		want                    int
		wantRole                string
	}{
		{name: "an editor changes the members of an unused audience", tok: "tok-editor", method: "PUT", path: unused + "/members", want: 200},
		{name: "an editor may not change those a live popup uses", tok: "tok-editor", method: "POST", path: used + "/members/add", want: 403, wantRole: "publisher"},
		{name: "a publisher may", tok: "tok-publisher", method: "POST", path: used + "/members/add", want: 200},
		{name: "an editor may not delete", tok: "tok-editor", method: "DELETE", path: unused, want: 403, wantRole: "publisher"},
		{name: "a publisher may not delete one a live popup uses", tok: "tok-publisher", method: "DELETE", path: used, want: 409},
		{name: "a publisher deletes an unused one", tok: "tok-publisher", method: "DELETE", path: unused, want: 200},
	}
	for _, tt := range tests {
		status, body, raw := api.Send(t, tt.tok, tt.method, "/admin/v1/audiences/"+tt.path, "text/plain", strings.NewReader("x1\n"))
		require.Equal(t, tt.want, status, "%s: %s", tt.name, raw)
		if tt.wantRole != "" {
			assert.Equal(t, tt.wantRole, body["error"].(map[string]any)["role_needed"], tt.name)
		}
		if tt.want == 409 {
			e := body["error"].(map[string]any)
			assert.Equal(t, "audience_in_use", e["code"])
			assert.Equal(t, float64(popupID), e["popups"].([]any)[0].(map[string]any)["id"], "names the popup")
		}
	}
	status, _, _ = api.Send(t, apitest.Token, "GET", "/admin/v1/audiences/"+unused, "", nil)
	assert.Equal(t, http.StatusNotFound, status, "deleted")
	status, body, _ = api.Send(t, apitest.Token, "GET", "/admin/v1/audiences/"+unused+"/history", "", nil)
	require.Equal(t, http.StatusOK, status, "the history outlives the audience")
	assert.Equal(t, "delete", body["changes"].([]any)[0].(map[string]any)["action"])

	// Archived, the popup no longer holds the audience.
	require.Equal(t, http.StatusOK, api.AdminDo(t, "DELETE", "/admin/v1/popups/"+apitest.Itoa(popupID), nil).Status)
	status, _, raw = api.Send(t, "tok-editor", "PUT", "/admin/v1/audiences/"+used+"/members", "text/plain", strings.NewReader("x2\n"))
	assert.Equal(t, http.StatusOK, status, raw)
	status, _, raw = api.Send(t, "tok-publisher", "DELETE", "/admin/v1/audiences/"+used, "", nil)
	assert.Equal(t, http.StatusOK, status, raw)
}

func TestAudienceMetadata(t *testing.T) {
	t.Parallel()
	api := apitest.StartAudiences(t)
	id := api.CreateAudience(t, "first")
	api.CreateAudience(t, "second")
	tests := []struct {
		name, tok, method, path, body string
		header                        []string
		want                          int
		wantCode                      string
	}{
		{name: "a taken name", tok: "tok-editor", method: "POST", path: "", body: `{"name":"first"}`, want: 409, wantCode: "name_taken"},
		{name: "no name", tok: "tok-editor", method: "POST", path: "", body: `{"description":"x"}`, want: 400, wantCode: "validation_failed"},
		{name: "a name too long", tok: "tok-editor", method: "POST", path: "", body: `{"name":"` + strings.Repeat("n", 101) + `"}`, want: 400, wantCode: "validation_failed"},
		{name: "an unknown field", tok: "tok-editor", method: "POST", path: "", body: `{"name":"x","colour":"red"}`, want: 400},
		{name: "a viewer creates", tok: "tok-viewer", method: "POST", path: "", body: `{"name":"x"}`, want: 403, wantCode: "forbidden"},
		{name: "a rename onto another's name", tok: "tok-editor", method: "PUT", path: "/" + id, body: `{"name":"second"}`, want: 409, wantCode: "name_taken"},
		{name: "a stale rename", tok: "tok-editor", method: "PUT", path: "/" + id, body: `{"name":"third"}`, header: []string{"If-Match", `"7"`}, want: 412},
		{name: "a rename", tok: "tok-editor", method: "PUT", path: "/" + id, body: `{"name":"third","description":"d"}`, header: []string{"If-Match", `"1"`}, want: 200},
		{name: "an unknown audience", tok: "tok-editor", method: "PUT", path: "/999999", body: `{"name":"x"}`, want: 404, wantCode: "audience_not_found"},
		{name: "a bad id", tok: "tok-editor", method: "PUT", path: "/x", body: `{"name":"x"}`, want: 400, wantCode: "invalid_audience_id"},
	}
	for _, tt := range tests {
		status, body, raw := api.Send(t, tt.tok, tt.method, "/admin/v1/audiences"+tt.path, "application/json", strings.NewReader(tt.body), tt.header...)
		require.Equal(t, tt.want, status, "%s: %s", tt.name, raw)
		if tt.wantCode != "" {
			assert.Equal(t, tt.wantCode, body["error"].(map[string]any)["code"], tt.name)
		}
	}
	status, body, raw := api.Send(t, "tok-viewer", "GET", "/admin/v1/audiences", "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	list := body["audiences"].([]any)
	require.Len(t, list, 2)
	first := list[0].(map[string]any)
	assert.Equal(t, "third", first["name"])
	assert.Equal(t, "d", first["description"])
	assert.Equal(t, int64(2), apitest.Num(first["version"]))
	assert.Equal(t, []any{}, first["used_by"])
}

// A million-member replace streams in, and back, within the admin listener's timeouts; the time
// it took is logged (docs/PERFORMANCE.md has the figure and its command). Unpaced, as
// BenchmarkAudienceTenMillionUpload: the path's own speed, not POPUP_AUDIENCE_UPLOAD_RATE's.
func TestAudienceMillionMemberUpload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a million-member upload")
	}
	cfg := apitest.Config(t)
	cfg.AudienceUploadRate = 0
	api := apitest.Start(t, cfg, nil)
	id := api.CreateAudience(t, "million")
	var body bytes.Buffer
	for i := range 1_000_000 {
		fmt.Fprintf(&body, "user-%07d\n", i)
	}
	size := body.Len()
	began := time.Now()
	status, res, raw := api.Send(t, apitest.Token, "PUT", "/admin/v1/audiences/"+id+"/members", "text/plain", &body)
	took := time.Since(began)
	require.Equal(t, http.StatusOK, status, raw)
	assert.Equal(t, int64(1_000_000), apitest.Num(res["size"]))
	t.Logf("replace of 1,000,000 uids (%d bytes): %v", size, took)

	began = time.Now()
	status, res, raw = api.Send(t, apitest.Token, "POST", "/admin/v1/audiences/"+id+"/members/remove", "text/plain", strings.NewReader("user-0000000\nuser-0999999\n"))
	require.Equal(t, http.StatusOK, status, raw)
	assert.Equal(t, int64(999_998), apitest.Num(res["size"]))
	t.Logf("remove of 2 uids from 1,000,000: %v", time.Since(began))

	began = time.Now()
	members := api.Members(t, id)
	t.Logf("stream back of 999,998 members: %v", time.Since(began))
	require.Len(t, members, 999_998)
	assert.Equal(t, "user-0000001", members[0])
	assert.Equal(t, "user-0999998", members[len(members)-1])
}

// The audience routes answer as api/openapi.yaml says, successes and refusals.
func TestAudienceAnswersMatchOpenAPI(t *testing.T) {
	t.Parallel()
	api := apitest.StartAudiences(t)
	s := apitest.NewSpecChecker(t, api.Public, api.Admin)
	adm := "http://" + api.Admin + "/admin/v1/audiences"
	auth := map[string]string{"Authorization": "Bearer " + apitest.Token}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	text, csv := with(auth, "Content-Type", "text/plain"), with(auth, "Content-Type", "text/csv")
	editor := with(map[string]string{"Authorization": "Bearer tok-editor"}, "Content-Type", "text/plain")

	_, body, _ := s.Do(t, apitest.Call{Method: "POST", URL: adm, Body: `{"name":"spec","description":"d"}`, Header: auth, Want: []int{http.StatusCreated}})
	var a struct{ ID int64 }
	require.NoError(t, json.Unmarshal(body, &a))
	id := adm + "/" + apitest.Itoa(a.ID)
	api.CreatePopup(t, apitest.PopupSpec("spec-user", map[string]any{"targeting": map[string]any{"audiences": map[string]any{"exclude": []int64{a.ID}}}}))

	calls := []apitest.Call{
		{Name: "list", Method: "GET", URL: adm, Header: auth, Want: []int{200}},
		{Name: "get", Method: "GET", URL: id, Header: auth, Want: []int{200}},
		{Name: "get unknown", Method: "GET", URL: adm + "/99999", Header: auth, Want: []int{404}, ErrCode: "audience_not_found"},
		{Name: "get bad id", Method: "GET", URL: adm + "/x", Header: auth, Want: []int{400}, ErrCode: "invalid_audience_id"},
		{Name: "create taken", Method: "POST", URL: adm, Body: `{"name":"spec"}`, Header: auth, Want: []int{409}, ErrCode: "name_taken"},
		{Name: "create invalid", Method: "POST", URL: adm, Body: `{"name":""}`, Header: auth, Want: []int{400}, ErrCode: "validation_failed"},
		{Name: "rename", Method: "PUT", URL: id, Body: `{"name":"spec2"}`, Header: auth, Want: []int{200}},
		{Name: "rename stale", Method: "PUT", URL: id, Body: `{"name":"spec3"}`, Header: with(auth, "If-Match", `"1"`), Want: []int{412}},
		{Name: "replace", Method: "PUT", URL: id + "/members", Body: "u1\nu2\n", Header: text, Want: []int{200}},
		{Name: "add CSV", Method: "POST", URL: id + "/members/add", Body: "uid\nu3\n", Header: csv, Want: []int{200}},
		{Name: "remove", Method: "POST", URL: id + "/members/remove", Body: "u1\n", Header: text, Want: []int{200}},
		{Name: "bad line", Method: "PUT", URL: id + "/members", Body: "u 1\n", Header: text, Want: []int{400}, ErrCode: "invalid_members"},
		{Name: "JSON members", Method: "PUT", URL: id + "/members", Body: `[]`, Header: auth, Want: []int{415}, ErrCode: "unsupported_media_type"},
		{Name: "over memory", Method: "PUT", URL: id + "/members", Body: strings.Repeat("m\n", 1) + apitest.UIDLines(20_000), Header: text, Want: []int{413}, ErrCode: "audience_memory"},
		{Name: "editor on a used audience", Method: "PUT", URL: id + "/members", Body: "u1\n", Header: editor, Want: []int{403}, ErrCode: "forbidden"},
		{Name: "member", Method: "GET", URL: id + "/members/u2", Header: auth, Want: []int{200}},
		{Name: "member bad uid", Method: "GET", URL: id + "/members/a%20b", Header: auth, Want: []int{400}},
		{Name: "members", Method: "GET", URL: id + "/members", Header: auth, Want: []int{200}},
		{Name: "members unknown", Method: "GET", URL: adm + "/99999/members", Header: auth, Want: []int{404}},
		{Name: "history", Method: "GET", URL: id + "/history", Header: auth, Want: []int{200}},
		{Name: "delete in use", Method: "DELETE", URL: id, Header: auth, Want: []int{409}, ErrCode: "audience_in_use"},
	}
	for _, c := range calls {
		t.Run(c.Name, func(t *testing.T) { s.Do(t, c) })
	}
}
