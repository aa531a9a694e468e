package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/config"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// syncBuffer is a log sink the check's goroutine writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

// gaugeValue is the value of the unlabelled gauge name on reg, and whether it is there.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1)
			return f.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

const coverageGauge = "popup_redis_cluster_full_coverage_nodes"

func TestCoverageCheckWarnsOfAClusterRequiringFullCoverage(t *testing.T) {
	t.Parallel()
	// The server's default, which deploy/ turns off: yes on every node.
	nodes := testenv.StartRedisCluster(t, 3, "--cluster-require-full-coverage", "yes")
	addrs := []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": strings.Join(addrs, ",")})
	require.NoError(t, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(t, err)
	defer rdb.Close()
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	check := redisstore.NewCoverageCheck(rdb, slog.New(slog.NewJSONHandler(logs, nil)), reg)
	require.NotNil(t, check)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	setCoverage := func(addr, v string) {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		require.NoError(t, c.ConfigSet(ctx, "cluster-require-full-coverage", v).Err())
	}

	full, err := check.Check(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, addrs, full)
	v, ok := gaugeValue(t, reg, coverageGauge)
	assert.True(t, ok)
	assert.Equal(t, 3.0, v)
	warning := logs.take()
	assert.Contains(t, warning, `"level":"WARN"`)
	assert.Contains(t, warning, "cluster-require-full-coverage is yes")
	assert.Contains(t, warning, "every user's GET degrades")
	for _, a := range addrs {
		assert.Contains(t, warning, a)
	}

	// One node left with it: that one is named, the others are not.
	setCoverage(nodes[0].Addr, "no")
	setCoverage(nodes[2].Addr, "no")
	full, err = check.Check(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{nodes[1].Addr}, full)
	v, _ = gaugeValue(t, reg, coverageGauge)
	assert.Equal(t, 1.0, v)
	warning = logs.take()
	assert.Contains(t, warning, nodes[1].Addr)
	assert.NotContains(t, warning, nodes[0].Addr)
	assert.NotContains(t, warning, nodes[2].Addr)

	// None: no warning, and the gauge says 0.
	setCoverage(nodes[1].Addr, "no")
	full, err = check.Check(ctx)
	require.NoError(t, err)
	assert.Empty(t, full)
	v, ok = gaugeValue(t, reg, coverageGauge)
	assert.True(t, ok)
	assert.Equal(t, 0.0, v)
	assert.Empty(t, logs.take())

	// Run checks again on a kick (the health check's reconnect), long before its interval.
	check.Every = time.Hour
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- check.Run(runCtx) }()
	defer func() { stop(); require.NoError(t, <-done) }()
	setCoverage(nodes[0].Addr, "yes")
	check.Kick()
	require.Eventually(t, func() bool {
		v, _ := gaugeValue(t, reg, coverageGauge)
		return v == 1
	}, 15*time.Second, 20*time.Millisecond, "the kicked check did not see the node's setting")
	assert.True(t, strings.Contains(logs.take(), nodes[0].Addr))
}

func TestCoverageCheckIsNoneWithoutACluster(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	reg := prometheus.NewRegistry()
	check := redisstore.NewCoverageCheck(rdb, slog.New(slog.DiscardHandler), reg)
	assert.Nil(t, check)
	check.Kick()
	assert.NoError(t, check.Run(context.Background()))
	_, ok := gaugeValue(t, reg, coverageGauge)
	assert.False(t, ok, "a single node exports no coverage gauge")
}
