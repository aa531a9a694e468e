package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver"
	"popupsvc/internal/config"
	"popupsvc/internal/testenv"
)

// clock is a settable time source shared by the server and the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const token = "test-admin-token"

// testConfig is a config against the test MariaDB and Redis, with a database and a key prefix
// of this test's own. Its Redis and request budgets are generous: tests run in parallel under
// the race detector on two shared cores, where the production budgets (tens of milliseconds)
// would turn a slow scheduler into degraded answers. A test of the budgets sets them back with
// tightBudgets.
func testConfig(t testing.TB) config.Config {
	t.Helper()
	cfg, err := config.Parse(map[string]string{
		"POPUP_MYSQL_DSN":            testenv.MySQLDSN(t, true),
		"POPUP_REDIS_ADDR":           testenv.RedisAddr(t),
		"POPUP_REDIS_CLUSTER":        strconv.FormatBool(testenv.RedisCluster(t)),
		"POPUP_REDIS_PREFIX":         testenv.RedisPrefix(t),
		"POPUP_ADMIN_TOKEN":          token,
		"POPUP_CONFIG_POLL_INTERVAL": "500ms",
		"POPUP_LOG_LEVEL":            "warn",
		"POPUP_LINK_SCHEMES":         "http,https,app", // popupSpec's buttons link to app://
		"POPUP_REDIS_TIMEOUT":        "1s",
		"POPUP_REQUEST_BUDGET":       "2s",
		"POPUP_KNOWN_USERS":          "10000", // a filter of 12 KB per test, not the default's 12 MB
	})
	require.NoError(t, err)
	cfg.HTTPAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

// tightBudgets sets the production defaults of the Redis timeout and the request budget, for a
// test of what happens when a dependency misses them.
func tightBudgets(t *testing.T, cfg *config.Config) {
	t.Helper()
	def, err := config.Parse(map[string]string{"POPUP_MYSQL_DSN": cfg.MySQLDSN, "POPUP_REDIS_ADDR": cfg.RedisAddr})
	require.NoError(t, err)
	cfg.RedisTimeout, cfg.RequestBudget = def.RedisTimeout, def.RequestBudget
}

// instance is one running popup-api.
type instance struct {
	public, admin string
	client        *http.Client
	cancel        context.CancelFunc
	done          chan error
}

// start starts popup-api and returns once it is ready (OnReady).
func start(t testing.TB, cfg config.Config, clk *clock) *instance {
	t.Helper()
	return launch(t, cfg, clk, true)
}

// launch starts popup-api and returns once it is ready (OnReady), or only bound (OnListen) when ready is
// false; it stops the server at the end of the test.
func launch(t testing.TB, cfg config.Config, clk *clock, ready bool) *instance {
	t.Helper()
	return launchLogged(t, cfg, clk, ready, io.Discard)
}

// launchLogged is launch with popup-api's log written to logs.
func launchLogged(t testing.TB, cfg config.Config, clk *clock, ready bool, logs io.Writer) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{cancel: cancel, done: make(chan error, 1), client: &http.Client{Timeout: 5 * time.Second}}
	up := make(chan struct{})
	listening := func(p, a net.Addr) { in.public, in.admin = p.String(), a.String(); close(up) }
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
		in.client.CloseIdleConnections()
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

type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (in *instance) do(t *testing.T, method, url string, body any, header map[string]string) response {
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
	res, err := in.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		require.NoError(t, json.Unmarshal(raw, &out.Body), string(raw))
	}
	return out
}

func (in *instance) adminDo(t *testing.T, method, path string, body any) response {
	t.Helper()
	return in.do(t, method, "http://"+in.admin+path, body, map[string]string{"Authorization": "Bearer " + token})
}

// createPopup creates a popup through the admin API and returns its id.
func (in *instance) createPopup(t *testing.T, p map[string]any) int64 {
	t.Helper()
	res := in.adminDo(t, http.MethodPost, "/admin/v1/popups", p)
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	return int64(res.Body["id"].(float64))
}

// get asks for a popup; it returns the shown popup's id (0 for none) and the response.
func (in *instance) get(t *testing.T, query string) (int64, response) {
	t.Helper()
	res := in.do(t, http.MethodGet, "http://"+in.public+"/api/v1/popup?"+query, nil, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	p, _ := res.Body["popup"].(map[string]any)
	if p == nil {
		return 0, res
	}
	return int64(p["id"].(float64)), res
}

func (in *instance) action(t *testing.T, popupID int64, body any) response {
	t.Helper()
	return in.do(t, http.MethodPost, "http://"+in.public+"/api/v1/popups/"+itoa(popupID)+"/actions", body, nil)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
