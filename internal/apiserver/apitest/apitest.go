// Package apitest runs popup-api for end-to-end tests, a test-only package: a test of any
// package (internal/apiserver's, an admin slice's) starts a real popup-api on the test MariaDB
// and Redis (internal/testenv) and drives it over HTTP. Tests of several packages run as
// several processes, in parallel, where one package's would run in one.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver"
	"popupsvc/internal/config"
	"popupsvc/internal/testenv"
	"popupsvc/internal/workerserver"
)

// Clock is a settable time source shared by the server and the test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a clock at 2026-11-22 10:00 UTC.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Token is the admin token of the operator "admin" of every Config.
const Token = "test-admin-token"

// Config is a config against the test MariaDB and Redis, with a database and a key prefix
// of this test's own. Its Redis and request budgets are generous: tests run in parallel under
// the race detector on two shared cores, where the production budgets (tens of milliseconds)
// would turn a slow scheduler into degraded answers. A test of the budgets sets them back with
// TightBudgets.
func Config(t testing.TB) config.Config {
	t.Helper()
	cfg, err := config.Parse(map[string]string{
		"POPUP_MYSQL_DSN":            testenv.MySQLDSN(t, true),
		"POPUP_REDIS_ADDR":           testenv.RedisAddr(t),
		"POPUP_REDIS_CLUSTER":        strconv.FormatBool(testenv.RedisCluster(t)),
		"POPUP_REDIS_PREFIX":         testenv.RedisPrefix(t),
		"POPUP_ADMIN_TOKEN":          Token,
		"POPUP_CONFIG_POLL_INTERVAL": "500ms",
		"POPUP_LOG_LEVEL":            "warn",
		"POPUP_LINK_SCHEMES":         "http,https,app", // PopupSpec's buttons link to app://
		"POPUP_REDIS_TIMEOUT":        "1s",
		"POPUP_REQUEST_BUDGET":       "2s",
		"POPUP_KNOWN_USERS":          "10000", // a filter of 12 KB per test, not the default's 12 MB
	})
	require.NoError(t, err)
	cfg.HTTPAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

// TightBudgets sets the production defaults of the Redis timeout and the request budget, for a
// test of what happens when a dependency misses them.
func TightBudgets(t *testing.T, cfg *config.Config) {
	t.Helper()
	def, err := config.Parse(map[string]string{"POPUP_MYSQL_DSN": cfg.MySQLDSN, "POPUP_REDIS_ADDR": cfg.RedisAddr})
	require.NoError(t, err)
	cfg.RedisTimeout, cfg.RequestBudget = def.RedisTimeout, def.RequestBudget
}

// Instance is one running popup-api: its listeners' addresses and the client the helpers use.
type Instance struct {
	Public, Admin string
	Client        *http.Client
	cancel        context.CancelFunc
	done          chan error
}

// Start starts popup-api and returns once it is ready (OnReady).
func Start(t testing.TB, cfg config.Config, clk *Clock) *Instance {
	t.Helper()
	return Launch(t, cfg, clk, true)
}

// Launch starts popup-api and returns once it is ready (OnReady), or only bound (OnListen) when ready is
// false; it stops the server at the end of the test.
func Launch(t testing.TB, cfg config.Config, clk *Clock, ready bool) *Instance {
	t.Helper()
	return LaunchLogged(t, cfg, clk, ready, io.Discard)
}

// LaunchLogged is Launch with popup-api's log written to logs.
func LaunchLogged(t testing.TB, cfg config.Config, clk *Clock, ready bool, logs io.Writer) *Instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &Instance{cancel: cancel, done: make(chan error, 1), Client: &http.Client{Timeout: 5 * time.Second}}
	up := make(chan struct{})
	listening := func(p, a net.Addr) { in.Public, in.Admin = p.String(), a.String(); close(up) }
	var hooks apiserver.Hooks
	if ready {
		hooks.OnReady = listening
	} else {
		hooks.OnListen = listening
	}
	if clk != nil {
		hooks.Now = clk.Now
	}
	log := slog.New(slog.NewTextHandler(logs, nil))
	go func() { in.done <- apiserver.Run(ctx, cfg, log, hooks) }()
	select {
	case <-up:
	case err := <-in.done:
		t.Fatalf("popup-api did not start: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("popup-api did not start in 15 s")
	}
	t.Cleanup(func() {
		// An idle keep-alive connection of the test's client would hold the graceful shutdown
		// for its whole poll interval (about half a second per server).
		in.Client.CloseIdleConnections()
		cancel()
		select {
		case err := <-in.done:
			if err != nil {
				t.Errorf("popup-api stopped with %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("popup-api did not stop in 20 s")
		}
	})
	return in
}

// Response is an answer as the helpers read it: Body is the JSON decoded (but for CSV).
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// Do sends a request (body JSON-encoded unless a string) and reads its answer.
func (in *Instance) Do(t *testing.T, method, url string, body any, header map[string]string) Response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := in.Client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := Response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		require.NoError(t, json.Unmarshal(raw, &out.Body), string(raw))
	}
	return out
}

// AdminDo is Do on the admin listener with the admin token.
func (in *Instance) AdminDo(t *testing.T, method, path string, body any) Response {
	t.Helper()
	return in.Do(t, method, "http://"+in.Admin+path, body, map[string]string{"Authorization": "Bearer " + Token})
}

// CreatePopup creates a popup through the admin API and returns its id.
func (in *Instance) CreatePopup(t *testing.T, p map[string]any) int64 {
	t.Helper()
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/popups", p)
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	return int64(res.Body["id"].(float64))
}

// Get asks for a popup; it returns the shown popup's id (0 for none) and the response.
func (in *Instance) Get(t *testing.T, query string) (int64, Response) {
	t.Helper()
	res := in.Do(t, http.MethodGet, "http://"+in.Public+"/api/v1/popup?"+query, nil, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	p, _ := res.Body["popup"].(map[string]any)
	if p == nil {
		return 0, res
	}
	return int64(p["id"].(float64)), res
}

// Action posts an action of a popup.
func (in *Instance) Action(t *testing.T, popupID int64, body any) Response {
	t.Helper()
	return in.Do(t, http.MethodPost, "http://"+in.Public+"/api/v1/popups/"+Itoa(popupID)+"/actions", body, nil)
}

// Itoa is n in decimal.
func Itoa(n int64) string { return strconv.FormatInt(n, 10) }

// PopupSpec is a popup body named name with content, an image, a link and a button, extra
// added over it.
func PopupSpec(name string, extra map[string]any) map[string]any {
	p := map[string]any{"name": name, "title": name + " title", "content": "hello", "image_url": "https://img.example/x.png",
		"link_url": "https://example.com/" + name, "buttons": []map[string]any{{"text": "Open", "link_url": "app://open"}}}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// CSVDo sends a table (or nothing) to the admin API and returns the status, the ETag and the body.
func (in *Instance) CSVDo(t *testing.T, method, path, body string, header map[string]string) (int, string, string) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + Token}
	for k, v := range header {
		h[k] = v
	}
	var b any
	if body != "" {
		b = body
	}
	res := in.Do(t, method, "http://"+in.Admin+path, b, h)
	return res.Status, res.Header.Get("ETag"), res.Raw
}

// RequireAlive fails the test if popup-api has exited.
func (in *Instance) RequireAlive(t *testing.T) {
	t.Helper()
	select {
	case err := <-in.done:
		in.done <- err // for the cleanup
		t.Fatalf("popup-api exited: %v", err)
	default:
	}
}

// Eventually waits, polling every 50 ms, until cond holds, failing the test after d.
func Eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartWorker runs popup-worker on cfg until the test ends.
func StartWorker(t *testing.T, cfg config.Config) {
	t.Helper()
	cfg.WorkerAddr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- workerserver.Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), workerserver.Hooks{})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("popup-worker stopped with an error: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("popup-worker did not stop in 20 s")
		}
	})
}

// ErrorOf returns the error code and the first named field of an error answer.
func ErrorOf(t *testing.T, res Response) (code, field string) {
	t.Helper()
	body, _ := res.Body["error"].(map[string]any)
	require.NotNil(t, body, res.Raw)
	code, _ = body["code"].(string)
	require.NotEmpty(t, body["message"], res.Raw)
	if fields, _ := body["fields"].([]any); len(fields) > 0 {
		field, _ = fields[0].(map[string]any)["field"].(string)
	}
	return code, field
}

// IngestKey creates an ingest key through the admin API and returns its secret.
func (in *Instance) IngestKey(t *testing.T) string {
	t.Helper()
	res := in.AdminDo(t, http.MethodPost, "/admin/v1/ingest-keys", map[string]any{"name": "test backend"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	key, _ := res.Body["key"].(string)
	require.NotEmpty(t, key, res.Raw)
	return key
}

// ConversionAs posts one conversion with ingest key key as its bearer token.
func (in *Instance) ConversionAs(t *testing.T, key string, body any) Response {
	t.Helper()
	return in.Do(t, http.MethodPost, "http://"+in.Public+"/api/v1/conversions", body, Keyed(key))
}

// Keyed is the header of a request an ingest key vouches for.
func Keyed(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// ReasonsOf is a preview answer's candidates: the reason each popup (by id) is not shown, "" for
// the one that is.
func ReasonsOf(t *testing.T, res Response) map[int64]string {
	t.Helper()
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	out := map[int64]string{}
	for _, c := range res.Body["candidates"].([]any) {
		m := c.(map[string]any)
		r, _ := m["reason"].(string)
		out[int64(m["id"].(float64))] = r
	}
	return out
}

// StartAudiences starts popup-api with an operator of each role and a memory budget for about
// 12,700 members, so that the 413 of the budget is cheap to reach.
func StartAudiences(t *testing.T) *Instance {
	t.Helper()
	cfg := Config(t)
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer", "ed@editor:tok-editor", "pat@publisher:tok-publisher"}
	cfg.AudienceMemory = 100 << 10
	return Start(t, cfg, nil)
}

// Send is an admin request with a raw body of its content type, answered in JSON (or, with raw,
// anything).
func (in *Instance) Send(t testing.TB, tok, method, path, contentType string, body io.Reader, header ...string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+in.Admin+path, body)
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

// CreateAudience creates an audience named name and returns its id.
func (in *Instance) CreateAudience(t testing.TB, name string) string {
	t.Helper()
	status, body, raw := in.Send(t, Token, http.MethodPost, "/admin/v1/audiences", "application/json", strings.NewReader(`{"name":"`+name+`"}`))
	require.Equal(t, http.StatusCreated, status, raw)
	return strconv.FormatInt(int64(body["id"].(float64)), 10)
}

// Members is the list streamed back, sorted.
func (in *Instance) Members(t testing.TB, id string) []string {
	t.Helper()
	status, _, raw := in.Send(t, Token, http.MethodGet, "/admin/v1/audiences/"+id+"/members", "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	got := strings.Fields(raw)
	slices.Sort(got)
	return got
}

// Num is a JSON number as an int64 (0 for none).
func Num(v any) int64 { f, _ := v.(float64); return int64(f) }

// UIDLines is n uids, one a line.
func UIDLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "m%d\n", i)
	}
	return b.String()
}
