package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/testenv"
)

// These tests serve popups that target audiences (docs/CONTRACT.md §2 Targeting, §11): the
// membership each instance holds, its propagation to a second instance, fail-closed answers,
// and the atomic swap of a new version under load.

func (in *instance) send(t testing.TB, tok, method, path, contentType string, body io.Reader, header ...string) (int, map[string]any, string) {
	t.Helper()
	return in.Send(t, tok, method, path, contentType, body, header...)
}

func (in *instance) createAudience(t testing.TB, name string) string {
	t.Helper()
	return in.CreateAudience(t, name)
}

func num(v any) int64 { return apitest.Num(v) }

// putMembers replaces audience id's members (text/plain) and returns the new version.
func (in *instance) putMembers(t testing.TB, id, path string, uids ...string) {
	t.Helper()
	method := http.MethodPut
	if path != "" {
		method = http.MethodPost
	}
	status, _, raw := in.send(t, token, method, "/admin/v1/audiences/"+id+"/members"+path, "text/plain", strings.NewReader(strings.Join(uids, "\n")+"\n"))
	require.Equal(t, http.StatusOK, status, raw)
}

// shows reports whether uid is shown popup id now.
func (in *instance) shows(t *testing.T, uid string, id int64) bool {
	t.Helper()
	got, res := in.get(t, "uid="+uid+"&platform=ios&app_version=1")
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	return got == id
}

// audiencePopup creates an active popup shown on every visit (reshow 0) to the members of
// include who are not in exclude.
func (in *instance) audiencePopup(t *testing.T, name, include, exclude string) int64 {
	t.Helper()
	refs := map[string]any{"include": []any{}, "exclude": []any{}}
	if include != "" {
		refs["include"] = []any{num64(t, include)}
	}
	if exclude != "" {
		refs["exclude"] = []any{num64(t, exclude)}
	}
	return in.createPopup(t, popupSpec(name, map[string]any{"reshow_after_seconds": 0,
		"targeting": map[string]any{"audiences": refs}}))
}

func num64(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', s)
		n = n*10 + int64(c-'0')
	}
	return n
}

// explainReason is the preview's reason and audience for popup id and uid.
func (in *instance) explainReason(t *testing.T, uid string, id int64) (string, int64) {
	t.Helper()
	res := in.adminDo(t, http.MethodGet, "/admin/v1/preview?uid="+uid+"&platform=ios&app_version=1", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	for _, c := range res.Body["candidates"].([]any) {
		cand := c.(map[string]any)
		if num(cand["id"]) == id {
			r, _ := cand["reason"].(string)
			return r, num(cand["audience"])
		}
	}
	t.Fatalf("popup %d is not a candidate: %s", id, res.Raw)
	return "", 0
}

func TestAudienceTargetingServesMembersOnAllInstances(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	api := start(t, cfg, nil)
	vips, churned := api.createAudience(t, "vips"), api.createAudience(t, "churned")
	api.putMembers(t, vips, "", "vip-1", "vip-2", "vip-1")
	api.putMembers(t, churned, "", "vip-2")
	id := api.audiencePopup(t, "for-vips", vips, churned)
	other := start(t, cfg, nil) // a second instance, started after: it loads the sets before it is ready

	for _, in := range []*instance{api, other} {
		require.Eventually(t, func() bool { return in.shows(t, "vip-1", id) }, 5*time.Second, 20*time.Millisecond)
		assert.False(t, in.shows(t, "vip-2", id), "excluded")
		assert.False(t, in.shows(t, "stranger", id), "not in the include")
		reason, aud := in.explainReason(t, "stranger", id)
		assert.Equal(t, "not_in_audience", reason)
		assert.Equal(t, num64(t, vips), aud)
		reason, aud = in.explainReason(t, "vip-2", id)
		assert.Equal(t, "in_excluded_audience", reason)
		assert.Equal(t, num64(t, churned), aud)
	}

	// new-1 is not a member yet: each instance remembers that nothing can show to it (a local
	// answer, under the snapshot's generation), which the new audience version must end.
	for _, in := range []*instance{api, other} {
		assert.False(t, in.shows(t, "new-1", id))
		assert.False(t, in.shows(t, "new-1", id))
	}
	// A delta is served by every instance within the 2 s (bounded wait, not a timing
	// assertion: the figure is measured in make bench-audiences).
	api.putMembers(t, vips, "/add", "new-1")
	for _, in := range []*instance{api, other} {
		require.Eventually(t, func() bool { return in.shows(t, "new-1", id) }, 10*time.Second, 20*time.Millisecond)
	}
	api.putMembers(t, vips, "/remove", "vip-1")
	for _, in := range []*instance{api, other} {
		require.Eventually(t, func() bool { return !in.shows(t, "vip-1", id) }, 10*time.Second, 20*time.Millisecond)
	}
	assert.Contains(t, other.Metrics(t), "popup_audiences_held 2")
	assert.Contains(t, other.Metrics(t), "popup_audience_unbound_popups 0")
}

// TestAudienceFailClosedWithMySQLDownAtStart: an instance that starts while MySQL is down takes
// the config from the Redis cache but cannot load the audiences: after
// POPUP_AUDIENCE_LOAD_TIMEOUT it is ready with the audience popup fail-closed (a member of the
// include is not shown it, and a member of an exclude would not be either), and once MySQL is
// back it loads them; a loaded audience keeps serving when MySQL goes away again.
func TestAudienceFailClosedWithMySQLDownAtStart(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	seeder := start(t, cfg, nil)
	vips := seeder.createAudience(t, "vips")
	seeder.putMembers(t, vips, "", "vip-1")
	id := seeder.audiencePopup(t, "for-vips", vips, "")
	everyone := seeder.createAudience(t, "everyone-else")
	seeder.putMembers(t, everyone, "", "vip-1")
	notFor := seeder.audiencePopup(t, "not-for-listed", "", everyone)
	mysqlProxy, _ := proxied(t, &cfg)
	mysqlProxy.SetDown(true)
	knownUser(t, cfg, "vip-1")
	knownUser(t, cfg, "stranger")
	cfg.AudienceLoadTimeout = 500 * time.Millisecond

	api := start(t, cfg, nil) // ready after the load timeout
	code, _ := api.status(t, http.MethodGet, "/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.False(t, api.shows(t, "vip-1", id), "an include not loaded: not a member")
	assert.False(t, api.shows(t, "stranger", notFor), "an exclude not loaded: a member")
	reason, aud := api.explainReason(t, "vip-1", id)
	assert.Equal(t, "audience_not_loaded", reason)
	assert.Equal(t, num64(t, vips), aud)
	metrics := api.Metrics(t)
	assert.Contains(t, metrics, "popup_audience_unbound_popups 2")
	assert.NotContains(t, metrics, "popup_audience_fail_closed_total 0")
	assert.Contains(t, metrics, "popup_ready 1")

	mysqlProxy.SetDown(false)
	require.Eventually(t, func() bool { return api.shows(t, "vip-1", id) }, 15*time.Second, 50*time.Millisecond)
	assert.True(t, api.shows(t, "stranger", notFor))
	assert.False(t, api.shows(t, "vip-1", notFor))

	mysqlProxy.SetDown(true)
	// The instance knows MySQL is down: every audience read now fails at the gate. (A loop, not
	// require.Eventually: api.metrics may fail the test, which only the test's goroutine may do.)
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(api.Metrics(t), `popup_dependency_up{dependency="mysql"} 0`); {
		require.True(t, time.Now().Before(deadline), "popup-api never saw MySQL go down")
		time.Sleep(50 * time.Millisecond)
	}
	assert.True(t, api.shows(t, "vip-1", id), "loaded audiences keep serving with MySQL down")
	assert.False(t, api.shows(t, "vip-1", notFor))
}

// TestAudienceSwapUnderLoad replaces an audience's members again and again while GETs of a
// member every version keeps run: not one of them may be answered without the popup (a request
// sees a whole version, old or new, never a half-built list or none).
func TestAudienceSwapUnderLoad(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	api := start(t, testConfig(t), nil)
	vips := api.createAudience(t, "vips")
	// One kept member per reader: two concurrent GETs of one user race for its state (one may
	// find nothing to show), which is not what this test is about.
	kept := []string{"kept-0", "kept-1", "kept-2", "kept-3"}
	api.putMembers(t, vips, "", kept...)
	id := api.audiencePopup(t, "for-vips", vips, "")
	require.Eventually(t, func() bool { return api.shows(t, "kept-0", id) }, 5*time.Second, 20*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var gets, misses atomic.Int64
	var first atomic.Value // the first miss's body
	var wg sync.WaitGroup
	for _, uid := range kept {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// (not api.get: a failed require must not run outside the test's goroutine)
			want := `{"popup":{"id":` + itoa(id) + `,`
			for ctx.Err() == nil && gets.Load() < 20_000 {
				got, degraded := rawGet(api, "uid="+uid+"&platform=ios&app_version=1")
				if degraded {
					continue // Redis was slow for this one (a loaded machine): no answer about audiences
				}
				gets.Add(1)
				if !strings.HasPrefix(got, want) {
					if misses.Add(1) == 1 {
						first.Store(got)
					}
				}
			}
		}()
	}
	others := make([]string, 0, 2000)
	for v := range 6 {
		others = others[:0]
		for i := range 2000 {
			others = append(others, "v"+itoa(int64(v))+"-"+itoa(int64(i)))
		}
		api.putMembers(t, vips, "", append(others, kept...)...)
		api.putMembers(t, vips, "/add", "x"+itoa(int64(v)))
	}
	cancel()
	wg.Wait()
	assert.Positive(t, gets.Load(), "answers that were not degraded")
	assert.Zero(t, misses.Load(), "GETs of a member every version keeps answered without the popup; the first: %v", first.Load())
}

// rawGet is the public GET's body, or the error's text, and whether the answer was degraded.
func rawGet(in *instance, query string) (string, bool) {
	res, err := in.client.Get("http://" + in.public + "/api/v1/popup?" + query)
	if err != nil {
		return err.Error(), false
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return res.Status + string(raw), false
	}
	return string(raw), res.Header.Get("X-Popup-Degraded") != ""
}
