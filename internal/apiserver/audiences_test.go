package apiserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Audiences through the admin HTTP API against the real MariaDB and Redis (docs/CONTRACT.md §11):
// member writes in both formats, their refusals (each of which changes nothing), roles, the list
// streamed back, and popups that name audiences.

// startAudiences starts popup-api with an operator of each role and a memory budget for about
// 12,700 members, so that the 413 of the budget is cheap to reach.
func startAudiences(t *testing.T) *instance {
	t.Helper()
	cfg := testConfig(t)
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer", "ed@editor:tok-editor", "pat@publisher:tok-publisher"}
	cfg.AudienceMemory = 100 << 10
	return start(t, cfg, nil)
}

// send is an admin request with a raw body of its content type, answered in JSON (or, with raw,
// anything).
func (in *instance) send(t testing.TB, tok, method, path, contentType string, body io.Reader, header ...string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+in.admin+path, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	}
	return res.StatusCode, out, string(raw)
}

func (in *instance) createAudience(t testing.TB, name string) string {
	t.Helper()
	status, body, raw := in.send(t, token, http.MethodPost, "/admin/v1/audiences", "application/json", strings.NewReader(`{"name":"`+name+`"}`))
	require.Equal(t, http.StatusCreated, status, raw)
	return strconv.FormatInt(int64(body["id"].(float64)), 10)
}

// members is the list streamed back, sorted.
func (in *instance) members(t testing.TB, id string) []string {
	t.Helper()
	status, _, raw := in.send(t, token, http.MethodGet, "/admin/v1/audiences/"+id+"/members", "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	got := strings.Fields(raw)
	slices.Sort(got)
	return got
}

func num(v any) int64 { f, _ := v.(float64); return int64(f) }

func TestAudienceMemberWritesRoundTrip(t *testing.T) {
	t.Parallel()
	api := startAudiences(t)
	id := api.createAudience(t, "vips")
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
		status, body, raw := api.send(t, "tok-editor", st.method, base+st.path, st.ctype, strings.NewReader(st.body))
		require.Equal(t, http.StatusOK, status, "%s: %s", st.name, raw)
		version++
		assert.Equal(t, st.wantLines, num(body["lines"]), st.name)
		assert.Equal(t, st.wantAdded, num(body["added"]), st.name)
		assert.Equal(t, st.wantRm, num(body["removed"]), st.name)
		assert.Equal(t, st.wantSize, num(body["size"]), st.name)
		assert.Equal(t, version, num(body["version"]), st.name)
	}
	assert.Equal(t, []string{"u1", "u2", "u3", "u4", "u5"}, api.members(t, id), "each member once, whatever the uploads repeated")

	for uid, want := range map[string]bool{"u4": true, "u2": true, "nobody": false} {
		status, body, raw := api.send(t, "tok-viewer", "GET", base+"/members/"+uid, "", nil)
		require.Equal(t, http.StatusOK, status, raw)
		assert.Equal(t, want, body["member"], uid)
		assert.Equal(t, version, num(body["version"]))
	}

	status, body, raw := api.send(t, "tok-viewer", "GET", base+"/history", "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	var actions []string
	for _, c := range body["changes"].([]any) {
		actions = append(actions, c.(map[string]any)["action"].(string))
	}
	assert.Equal(t, []string{"add", "remove", "add", "replace", "create"}, actions, "newest first")

	// A second replace supersedes every upload so far; the list is only the new one.
	status, body, raw = api.send(t, "tok-editor", "PUT", base+"/members", "text/plain", strings.NewReader("u9\nu1\n"))
	require.Equal(t, http.StatusOK, status, raw)
	assert.Equal(t, int64(1), num(body["added"]))
	assert.Equal(t, int64(4), num(body["removed"]))
	assert.Equal(t, []string{"u1", "u9"}, api.members(t, id))
}

func TestAudienceUploadsRefusedChangeNothing(t *testing.T) {
	t.Parallel()
	api := startAudiences(t)
	id := api.createAudience(t, "refusals")
	base := "/admin/v1/audiences/" + id
	status, _, raw := api.send(t, token, "PUT", base+"/members", "text/plain", strings.NewReader("a1\na2\n"))
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
				assert.Equal(t, int64(2), num(e["bad_lines"]))
				lines := e["lines"].([]any)
				require.Len(t, lines, 2)
				assert.Equal(t, int64(2), num(lines[0].(map[string]any)["line"]))
				assert.Equal(t, int64(3), num(lines[1].(map[string]any)["line"]))
			}},
		{name: "150 bad lines name the first 100", method: "POST", path: "/members/add", ctype: "text/plain", body: &many,
			wantStatus: 400, wantCode: "invalid_members", check: func(t *testing.T, body map[string]any) {
				e := body["error"].(map[string]any)
				assert.Equal(t, int64(150), num(e["bad_lines"]))
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
				assert.Equal(t, int64(1_000_000), num(e["limit"]))
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
		tok := token
		if tt.name == "a viewer" {
			tok = "tok-viewer"
		}
		status, body, raw := api.send(t, tok, tt.method, base+tt.path, tt.ctype, tt.body, tt.header...)
		require.Equal(t, tt.wantStatus, status, "%s: %s", tt.name, raw[:min(len(raw), 500)])
		assert.Equal(t, tt.wantCode, body["error"].(map[string]any)["code"], tt.name)
		if tt.check != nil {
			tt.check(t, body)
		}
		status, body, _ = api.send(t, token, "GET", base, "", nil)
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, int64(2), num(body["version"]), "%s changes nothing", tt.name)
		assert.Equal(t, int64(2), num(body["size"]), tt.name)
		assert.Equal(t, []string{"a1", "a2"}, api.members(t, id), tt.name)
	}

	status, _, raw = api.send(t, token, "PUT", base+"/members", "text/plain", strings.NewReader("a1\n"), "If-Match", `"2"`)
	assert.Equal(t, http.StatusOK, status, "the current ETag writes: %s", raw)
}

func TestAudienceRolesAndPopupsThatUseThem(t *testing.T) {
	t.Parallel()
	api := startAudiences(t)
	used, unused := api.createAudience(t, "used"), api.createAudience(t, "unused")
	usedID, _ := strconv.ParseInt(used, 10, 64)

	// A popup naming an audience that does not exist is refused naming the field.
	res := api.adminDo(t, "POST", "/admin/v1/popups", popupSpec("nowhere", map[string]any{
		"targeting": map[string]any{"audiences": map[string]any{"include": []int64{usedID}, "exclude": []int64{1 << 40}}}}))
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	assert.Equal(t, "targeting.audiences.exclude[0]", res.Body["error"].(map[string]any)["fields"].([]any)[0].(map[string]any)["field"])

	popupID := api.createPopup(t, popupSpec("targeted", map[string]any{
		"targeting": map[string]any{"audiences": map[string]any{"include": []int64{usedID}}}}))
	status, body, raw := api.send(t, "tok-viewer", "GET", "/admin/v1/audiences/"+used, "", nil)
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
		status, body, raw := api.send(t, tt.tok, tt.method, "/admin/v1/audiences/"+tt.path, "text/plain", strings.NewReader("x1\n"))
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
	status, _, _ = api.send(t, token, "GET", "/admin/v1/audiences/"+unused, "", nil)
	assert.Equal(t, http.StatusNotFound, status, "deleted")
	status, body, _ = api.send(t, token, "GET", "/admin/v1/audiences/"+unused+"/history", "", nil)
	require.Equal(t, http.StatusOK, status, "the history outlives the audience")
	assert.Equal(t, "delete", body["changes"].([]any)[0].(map[string]any)["action"])

	// Archived, the popup no longer holds the audience.
	require.Equal(t, http.StatusOK, api.adminDo(t, "DELETE", "/admin/v1/popups/"+itoa(popupID), nil).Status)
	status, _, raw = api.send(t, "tok-editor", "PUT", "/admin/v1/audiences/"+used+"/members", "text/plain", strings.NewReader("x2\n"))
	assert.Equal(t, http.StatusOK, status, raw)
	status, _, raw = api.send(t, "tok-publisher", "DELETE", "/admin/v1/audiences/"+used, "", nil)
	assert.Equal(t, http.StatusOK, status, raw)
}

func TestAudienceMetadata(t *testing.T) {
	t.Parallel()
	api := startAudiences(t)
	id := api.createAudience(t, "first")
	api.createAudience(t, "second")
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
		status, body, raw := api.send(t, tt.tok, tt.method, "/admin/v1/audiences"+tt.path, "application/json", strings.NewReader(tt.body), tt.header...)
		require.Equal(t, tt.want, status, "%s: %s", tt.name, raw)
		if tt.wantCode != "" {
			assert.Equal(t, tt.wantCode, body["error"].(map[string]any)["code"], tt.name)
		}
	}
	status, body, raw := api.send(t, "tok-viewer", "GET", "/admin/v1/audiences", "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	list := body["audiences"].([]any)
	require.Len(t, list, 2)
	first := list[0].(map[string]any)
	assert.Equal(t, "third", first["name"])
	assert.Equal(t, "d", first["description"])
	assert.Equal(t, int64(2), num(first["version"]))
	assert.Equal(t, []any{}, first["used_by"])
}

// A million-member replace streams in, and back, within the admin listener's timeouts; the time
// it took is logged (docs/PERFORMANCE.md has the figure and its command).
func TestAudienceMillionMemberUpload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a million-member upload")
	}
	cfg := testConfig(t)
	api := start(t, cfg, nil)
	id := api.createAudience(t, "million")
	var body bytes.Buffer
	for i := range 1_000_000 {
		fmt.Fprintf(&body, "user-%07d\n", i)
	}
	size := body.Len()
	began := time.Now()
	status, res, raw := api.send(t, token, "PUT", "/admin/v1/audiences/"+id+"/members", "text/plain", &body)
	took := time.Since(began)
	require.Equal(t, http.StatusOK, status, raw)
	assert.Equal(t, int64(1_000_000), num(res["size"]))
	t.Logf("replace of 1,000,000 uids (%d bytes): %v", size, took)

	began = time.Now()
	status, res, raw = api.send(t, token, "POST", "/admin/v1/audiences/"+id+"/members/remove", "text/plain", strings.NewReader("user-0000000\nuser-0999999\n"))
	require.Equal(t, http.StatusOK, status, raw)
	assert.Equal(t, int64(999_998), num(res["size"]))
	t.Logf("remove of 2 uids from 1,000,000: %v", time.Since(began))

	began = time.Now()
	members := api.members(t, id)
	t.Logf("stream back of 999,998 members: %v", time.Since(began))
	require.Len(t, members, 999_998)
	assert.Equal(t, "user-0000001", members[0])
	assert.Equal(t, "user-0999998", members[len(members)-1])
}

// The audience routes answer as api/openapi.yaml says, successes and refusals.
func TestAudienceAnswersMatchOpenAPI(t *testing.T) {
	t.Parallel()
	api := startAudiences(t)
	s := newSpecChecker(t, api.public, api.admin)
	adm := "http://" + api.admin + "/admin/v1/audiences"
	auth := map[string]string{"Authorization": "Bearer " + token}
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

	_, body, _ := s.do(t, call{method: "POST", url: adm, body: `{"name":"spec","description":"d"}`, header: auth, want: []int{http.StatusCreated}})
	var a struct{ ID int64 }
	require.NoError(t, json.Unmarshal(body, &a))
	id := adm + "/" + itoa(a.ID)
	api.createPopup(t, popupSpec("spec-user", map[string]any{"targeting": map[string]any{"audiences": map[string]any{"exclude": []int64{a.ID}}}}))

	calls := []call{
		{name: "list", method: "GET", url: adm, header: auth, want: []int{200}},
		{name: "get", method: "GET", url: id, header: auth, want: []int{200}},
		{name: "get unknown", method: "GET", url: adm + "/99999", header: auth, want: []int{404}, errCode: "audience_not_found"},
		{name: "get bad id", method: "GET", url: adm + "/x", header: auth, want: []int{400}, errCode: "invalid_audience_id"},
		{name: "create taken", method: "POST", url: adm, body: `{"name":"spec"}`, header: auth, want: []int{409}, errCode: "name_taken"},
		{name: "create invalid", method: "POST", url: adm, body: `{"name":""}`, header: auth, want: []int{400}, errCode: "validation_failed"},
		{name: "rename", method: "PUT", url: id, body: `{"name":"spec2"}`, header: auth, want: []int{200}},
		{name: "rename stale", method: "PUT", url: id, body: `{"name":"spec3"}`, header: with(auth, "If-Match", `"1"`), want: []int{412}},
		{name: "replace", method: "PUT", url: id + "/members", body: "u1\nu2\n", header: text, want: []int{200}},
		{name: "add CSV", method: "POST", url: id + "/members/add", body: "uid\nu3\n", header: csv, want: []int{200}},
		{name: "remove", method: "POST", url: id + "/members/remove", body: "u1\n", header: text, want: []int{200}},
		{name: "bad line", method: "PUT", url: id + "/members", body: "u 1\n", header: text, want: []int{400}, errCode: "invalid_members"},
		{name: "JSON members", method: "PUT", url: id + "/members", body: `[]`, header: auth, want: []int{415}, errCode: "unsupported_media_type"},
		{name: "over memory", method: "PUT", url: id + "/members", body: strings.Repeat("m\n", 1) + uidLines(20_000), header: text, want: []int{413}, errCode: "audience_memory"},
		{name: "editor on a used audience", method: "PUT", url: id + "/members", body: "u1\n", header: editor, want: []int{403}, errCode: "forbidden"},
		{name: "member", method: "GET", url: id + "/members/u2", header: auth, want: []int{200}},
		{name: "member bad uid", method: "GET", url: id + "/members/a%20b", header: auth, want: []int{400}},
		{name: "members", method: "GET", url: id + "/members", header: auth, want: []int{200}},
		{name: "members unknown", method: "GET", url: adm + "/99999/members", header: auth, want: []int{404}},
		{name: "history", method: "GET", url: id + "/history", header: auth, want: []int{200}},
		{name: "delete in use", method: "DELETE", url: id, header: auth, want: []int{409}, errCode: "audience_in_use"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) { s.do(t, c) })
	}
}

func uidLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "m%d\n", i)
	}
	return b.String()
}

// BenchmarkAudienceTenMillionUpload replaces an audience's members with 10,000,000 uids over
// loopback, the admin listener's two-minute read timeout in force, then streams them back
// (docs/PERFORMANCE.md, "Audiences", has the figures and the command).
func BenchmarkAudienceTenMillionUpload(b *testing.B) {
	cfg := testConfig(b)
	api := start(b, cfg, nil)
	var body bytes.Buffer
	for i := range 10_000_000 {
		fmt.Fprintf(&body, "user-%08d\n", i)
	}
	raw := body.Bytes()
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for range b.N {
		id := api.createAudience(b, "ten-million-"+strconv.Itoa(b.N)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		began := time.Now()
		status, res, text := api.send(b, token, "PUT", "/admin/v1/audiences/"+id+"/members", "text/plain", bytes.NewReader(raw))
		if status != http.StatusOK || num(res["size"]) != 10_000_000 {
			b.Fatalf("upload: %d %.300s", status, text)
		}
		b.ReportMetric(time.Since(began).Seconds(), "upload-s")
		began = time.Now()
		status, res, text = api.send(b, token, "POST", "/admin/v1/audiences/"+id+"/members/add", "text/plain", strings.NewReader("extra-1\nextra-2\n"))
		if status != http.StatusOK || num(res["size"]) != 10_000_002 {
			b.Fatalf("add: %d %.300s", status, text)
		}
		b.ReportMetric(time.Since(began).Seconds(), "add2-s")
		began = time.Now()
		status, _, text = api.send(b, token, "GET", "/admin/v1/audiences/"+id+"/members", "", nil)
		if status != http.StatusOK || strings.Count(text, "\n") != 10_000_002 {
			b.Fatalf("stream back: %d, %d lines", status, strings.Count(text, "\n"))
		}
		b.ReportMetric(time.Since(began).Seconds(), "streamback-s")
	}
}
