package apiserver_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

// metric reads one series from the instance's /metrics (0 when absent).
func (in *instance) metric(t *testing.T, series string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+in.admin+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := in.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(val, 64)
			require.NoError(t, err)
			return v
		}
	}
	require.NoError(t, sc.Err())
	return 0
}

// redisReads is how many homepage requests went to Redis for a decision: every request the
// local answers did not answer (a miss) reads the user's state.
func (in *instance) redisReads(t *testing.T) float64 {
	return in.metric(t, "popup_local_answers_misses_total")
}

func TestSteadyStateUserCostsNoRedisRead(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	clk := newClock()
	api := start(t, testConfig(t), clk)
	id := api.createPopup(t, popupSpec("steady", map[string]any{"reshow_after_seconds": 3600}))
	const q = "uid=steady-1&platform=ios&app_version=8.10.0&region=us&lang=en"

	got, _ := api.get(t, q)
	require.Equal(t, id, got)
	got, _ = api.get(t, q)
	require.Zero(t, got, "hidden for the reshow interval: the first 'nothing' is a full decision")

	reads, hits := api.redisReads(t), api.metric(t, "popup_local_answers_hits_total")
	full := api.metric(t, `popup_decisions_total{outcome="none_eligible"}`)
	const n = 50
	for i := 0; i < n; i++ {
		clk.Advance(time.Minute)
		got, res := api.get(t, q)
		require.Zero(t, got)
		require.NotNil(t, res.Body["config_version"], "a local answer is a real answer, not a degraded one")
	}
	assert.Equal(t, reads, api.redisReads(t), "no Redis read for %d steady-state requests", n)
	assert.Equal(t, hits+n, api.metric(t, "popup_local_answers_hits_total"))
	assert.Equal(t, full, api.metric(t, `popup_decisions_total{outcome="none_eligible"}`))
	assert.Equal(t, float64(n), api.metric(t, `popup_decisions_total{outcome="none_eligible_local"}`))

	clk.Advance(10 * time.Minute) // 60 minutes after the impression: the reshow interval is over
	got, _ = api.get(t, q)
	assert.Equal(t, id, got, "the local answer ends when the reshow interval does")
	assert.Equal(t, reads+1, api.redisReads(t))
}

func TestLocalAnswerOffReadsRedisEveryTime(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.LocalAnswerCacheSize = 0
	api := start(t, cfg, nil)
	api.createPopup(t, popupSpec("off", map[string]any{"reshow_after_seconds": 3600}))
	const q = "uid=off-1&platform=ios&app_version=1"
	api.get(t, q)
	full := api.metric(t, `popup_decisions_total{outcome="none_eligible"}`)
	for i := 0; i < 5; i++ {
		got, _ := api.get(t, q)
		require.Zero(t, got)
	}
	assert.Equal(t, full+5, api.metric(t, `popup_decisions_total{outcome="none_eligible"}`))
	assert.Zero(t, api.metric(t, "popup_local_answers_hits_total"), "no local answers series when off")
}

// TestConfigChangeReachesARememberedUserWithin2s: a user another instance remembers as "nothing
// to show" sees a new popup as soon as that instance has the new config.
func TestConfigChangeReachesARememberedUserWithin2s(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	cfg.ConfigPoll = 10 * time.Second // pub/sub must do it; the poll is only the safety net
	a := start(t, cfg, nil)
	b := start(t, cfg, nil)
	first := a.createPopup(t, popupSpec("first", map[string]any{"reshow_after_seconds": 3600}))
	const q = "uid=remembered&platform=web&app_version=1"
	require.Eventually(t, func() bool { got, _ := b.get(t, q); return got == first }, 2*time.Second, 20*time.Millisecond)
	got, _ := b.get(t, q)
	require.Zero(t, got)
	hits := b.metric(t, "popup_local_answers_hits_total")
	got, _ = b.get(t, q)
	require.Zero(t, got)
	require.Equal(t, hits+1, b.metric(t, "popup_local_answers_hits_total"), "b answers the user locally now")

	second := a.createPopup(t, popupSpec("second", nil))
	began := time.Now()
	deadline := began.Add(2 * time.Second)
	for got = 0; got == 0 && time.Now().Before(deadline); {
		if got, _ = b.get(t, q); got == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	assert.Equal(t, second, got, "instance b shows the new popup to its remembered user within 2 s")
	t.Logf("propagated in %s", time.Since(began))
}
