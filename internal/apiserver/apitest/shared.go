package apitest

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/config"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
)

// The fixtures that tests of several packages share: internal/apiserver's and the console's
// browser tests (internal/console/browsertest) build the same operators, experiments and
// erasures.

// UserQuery is the query of GET /api/v1/popup for the user u1 on iOS 8.10.0.
const UserQuery = "uid=u1&platform=ios&app_version=8.10.0"

// RoleTokens are the operators of StartWithRoles, by role; "old" is declared without a role.
var RoleTokens = map[string]string{
	"viewer":    "tok-viewer",
	"editor":    "tok-editor",
	"publisher": "tok-publisher",
	"admin":     Token,
	"old":       "tok-old",
}

// StartWithRoles starts popup-api with an operator of each role (RoleTokens).
func StartWithRoles(t *testing.T) (*Instance, config.Config) {
	t.Helper()
	cfg := Config(t)
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer", "ed@editor:tok-editor", "pat@publisher:tok-publisher", "old:tok-old"}
	return Start(t, cfg, nil), cfg
}

// PrivacyKey is the erasure key of PrivacyConfig.
const PrivacyKey = "test-privacy-key-0123456789abcdef0123456789abcdef"

// PrivacyConfig is Config with erasures on.
func PrivacyConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := Config(t)
	cfg.PrivacyKey = PrivacyKey
	return cfg
}

// DB opens cfg's MariaDB database until the test ends.
func DB(t *testing.T, cfg config.Config) *sql.DB {
	t.Helper()
	db, err := mysqlstore.Open(context.Background(), cfg.MySQLDSN, 2)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// Count is the answer of query, a SELECT COUNT(*).
func Count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(query, args...).Scan(&n))
	return n
}

// Entries are the entries of a 200 answer of the audit log or a history.
func Entries(t *testing.T, res Response) []map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	raw, ok := res.Body["entries"].([]any)
	require.True(t, ok, res.Raw)
	out := make([]map[string]any, len(raw))
	for i, e := range raw {
		out[i] = e.(map[string]any)
	}
	return out
}

// As is a request of the admin listener as the operator of token tok.
func (in *Instance) As(t *testing.T, tok, method, path string, body any, header map[string]string) Response {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + tok}
	for k, v := range header {
		h[k] = v
	}
	return in.Do(t, method, "http://"+in.Admin+path, body, h)
}

// RawGet is a GET of the admin listener, as the operator of token tok, whose answer is not JSON
// (metrics, pprof): its status and body.
func (in *Instance) RawGet(t *testing.T, tok, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+in.Admin+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := in.Client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(raw)
}

// Metrics is the admin listener's /metrics page.
func (in *Instance) Metrics(t *testing.T) string {
	t.Helper()
	status, body := in.RawGet(t, Token, "/metrics")
	require.Equal(t, http.StatusOK, status, body)
	return body
}

// PublicPopup polls GET /api/v1/popup for uid until want(popup) holds (a change is served within 2 s).
func (in *Instance) PublicPopup(t *testing.T, uid string, want func(p map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, res := in.Get(t, "uid="+uid+"&platform=ios&app_version=9.0.0")
		p, _ := res.Body["popup"].(map[string]any)
		if want(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /api/v1/popup for %s never served the expected popup; last: %s", uid, res.Raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Erase asks for uid's erasure and waits until it is done; it returns the status answer.
func (in *Instance) Erase(t *testing.T, uid string) map[string]any {
	t.Helper()
	res := in.AdminDo(t, http.MethodDelete, "/admin/v1/users/"+uid, nil)
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	id, _ := res.Body["erasure_id"].(string)
	require.True(t, privacy.ValidID(id), res.Raw)
	assert.Equal(t, "/admin/v1/erasures/"+id, res.Header.Get("Location"))
	assert.NotContains(t, res.Raw, uid)
	var status Response
	Eventually(t, 60*time.Second, "the erasure is done", func() bool {
		status = in.AdminDo(t, http.MethodGet, "/admin/v1/erasures/"+id, nil)
		require.Equal(t, http.StatusOK, status.Status, status.Raw)
		return status.Body["status"] == "done"
	})
	assert.NotContains(t, status.Raw, uid)
	return status.Body
}

// StartedExperiment creates a live popup "own" with variants a and discount at 45% each and a
// control at 10% in mode, under a live "fallback" popup of lower priority, starts it and returns
// both ids and the running experiment as the assignment sees it.
func (in *Instance) StartedExperiment(t *testing.T, mode string) (id, fallback int64, e *popup.Experiment) {
	t.Helper()
	return in.NamedExperiment(t, "", mode)
}

// NamedExperiment is StartedExperiment with the popups' names suffixed, for a second one.
func (in *Instance) NamedExperiment(t *testing.T, suffix, mode string) (id, fallback int64, e *popup.Experiment) {
	t.Helper()
	fallback = in.CreatePopup(t, PopupSpec("fallback"+suffix, map[string]any{"priority": 1, "title": "Fallback", "image_url": ""}))
	id = in.CreatePopup(t, PopupSpec("own"+suffix, map[string]any{"priority": 10, "title": "Own", "image_url": "",
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 45, "title": "A"}, {"key": "discount", "weight": 45, "title": "Discount"}},
			"control": map[string]any{"weight": 10, "mode": mode}}}))
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	require.Equal(t, http.StatusOK, in.AdminDo(t, http.MethodPost, "/admin/v1/cache/reload", nil).Status)
	e = &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Salt: res.Body["experiment"].(map[string]any)["salt"].(string),
		Variants: []popup.Variant{{Key: "a", Weight: 45}, {Key: "discount", Weight: 45}}, Control: &popup.Control{Weight: 10, Mode: popup.ControlMode(mode)}}
	return id, fallback, e
}

// ShippedExperiment is NamedExperiment concluded with variant: its content is the popup's now.
func (in *Instance) ShippedExperiment(t *testing.T, suffix, variant string) int64 {
	t.Helper()
	id, _, _ := in.NamedExperiment(t, suffix, "none")
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+Itoa(id)+"/experiment/conclude", map[string]any{"variant": variant})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	return id
}

// ArmUsers returns, for each arm of a running experiment (by index, the control last), the first
// few uids with prefix the documented assignment puts in it.
func ArmUsers(t *testing.T, e *popup.Experiment, prefix string, each int) [][]string {
	t.Helper()
	a := popup.NewAssigner(e)
	out := make([][]string, e.ArmCount())
	for i := 0; i < 100_000; i++ {
		uid := prefix + Itoa(int64(i))
		if arm := a.Assign(uid); arm >= 0 && len(out[arm]) < each {
			out[arm] = append(out[arm], uid)
		}
		full := true
		for _, us := range out {
			full = full && len(us) == each
		}
		if full {
			return out
		}
	}
	t.Fatalf("no %d users for every arm among 100,000", each)
	return nil
}

// CountedUsers writes n users (uids prefix0 …) into popup_experiment_user as the worker would have
// counted them in e's phase, each in the arm the assignment gives, and returns how many of them
// the weights 20/70/10 (a, discount, control) would move under the same salt: a keeps buckets
// [0, 2000), discount takes [2000, 9000), the control keeps [9000, 10000).
func CountedUsers(t *testing.T, dsn string, id int64, e *popup.Experiment, prefix string, n int) int64 {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	assign := popup.NewAssigner(e)
	var moved int64
	for i := range n {
		uid := prefix + Itoa(int64(i))
		arm := e.ArmKey(assign.Assign(uid))
		_, err := db.ExecContext(t.Context(), `INSERT INTO popup_experiment_user (popup_id, salt, uid, arm, first_exposed_at) VALUES (?, ?, ?, ?, NOW(3))`, id, e.Salt, uid, arm)
		require.NoError(t, err)
		if b := popup.ArmBucket(e.Salt, uid); arm == "a" && b >= 2000 || arm == "discount" && b >= 9000 {
			moved++
		}
	}
	return moved
}

// ErrCode is the error code of an error answer ("" for none).
func ErrCode(res Response) string {
	e, _ := res.Body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// Conversion posts a conversion to the public listener, without a key.
func (in *Instance) Conversion(t *testing.T, body any) Response {
	t.Helper()
	return in.Do(t, http.MethodPost, "http://"+in.Public+"/api/v1/conversions", body, nil)
}

// WaitServed waits until the admin preview serves popup id (the instance has loaded it).
func (in *Instance) WaitServed(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res := in.AdminDo(t, http.MethodGet, "/admin/v1/preview?uid=oa-probe&platform=ios&app_version=8.10.0", nil)
		if res.Status == http.StatusOK && strings.Contains(res.Raw, `"id":`+id+`,`) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("popup %s not served within 10 s", id)
}

// WriteCounts are the rows of the tables a popup write adds to.
type WriteCounts struct{ Popups, Revisions, Audits int }

// PopupWriteCounts counts the rows a popup write adds to, to show that a refused one wrote nothing.
func PopupWriteCounts(t *testing.T, db *sql.DB) WriteCounts {
	t.Helper()
	return WriteCounts{Count(t, db, "SELECT COUNT(*) FROM popup_config"), Count(t, db, "SELECT COUNT(*) FROM popup_revision"),
		Count(t, db, "SELECT COUNT(*) FROM popup_audit")}
}
