package apiserver_test

import (
	"database/sql"
	"io"
	"net/http"
	"testing"
	"time"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/config"
)

// The package's tests drive popup-api through internal/apiserver/apitest, under the short names
// they were written with.

type (
	clock    = apitest.Clock
	response = apitest.Response
)

const token = apitest.Token

func newClock() *clock                            { return apitest.NewClock() }
func testConfig(t testing.TB) config.Config       { t.Helper(); return apitest.Config(t) }
func tightBudgets(t *testing.T, c *config.Config) { t.Helper(); apitest.TightBudgets(t, c) }
func itoa(n int64) string                         { return apitest.Itoa(n) }

func countRows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	return apitest.Count(t, db, "SELECT COUNT(*) FROM "+table)
}

// instance is one running popup-api (apitest.Instance) with the fields and methods the tests
// name.
type instance struct {
	*apitest.Instance
	public, admin string
	client        *http.Client
}

func wrap(in *apitest.Instance) *instance {
	return &instance{Instance: in, public: in.Public, admin: in.Admin, client: in.Client}
}

func start(t testing.TB, cfg config.Config, clk *clock) *instance {
	t.Helper()
	return wrap(apitest.Start(t, cfg, clk))
}

func launch(t testing.TB, cfg config.Config, clk *clock, ready bool) *instance {
	t.Helper()
	return wrap(apitest.Launch(t, cfg, clk, ready))
}

func launchLogged(t testing.TB, cfg config.Config, clk *clock, ready bool, logs io.Writer) *instance {
	t.Helper()
	return wrap(apitest.LaunchLogged(t, cfg, clk, ready, logs))
}

func startWithWorker(t *testing.T) (config.Config, *instance, *sql.DB) {
	t.Helper()
	cfg, in, db := apitest.StartWithWorker(t)
	return cfg, wrap(in), db
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	apitest.Eventually(t, d, what, cond)
}

func (in *instance) do(t *testing.T, method, url string, body any, header map[string]string) response {
	t.Helper()
	return in.Do(t, method, url, body, header)
}

func (in *instance) adminDo(t *testing.T, method, path string, body any) response {
	t.Helper()
	return in.AdminDo(t, method, path, body)
}

func (in *instance) createPopup(t *testing.T, p map[string]any) int64 {
	t.Helper()
	return in.CreatePopup(t, p)
}

func (in *instance) get(t *testing.T, query string) (int64, response) {
	t.Helper()
	return in.Get(t, query)
}

func (in *instance) action(t *testing.T, popupID int64, body any) response {
	t.Helper()
	return in.Action(t, popupID, body)
}
