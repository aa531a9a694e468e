package apiserver_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

// lockedBuffer is a log sink popup-api writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWarnsOfAClusterRequiringFullCoverage: popup-api started on a Redis Cluster whose nodes keep
// the server's default cluster-require-full-coverage yes logs a warning naming the setting and
// what it costs, and exports the number of such nodes for the alert rules.
func TestWarnsOfAClusterRequiringFullCoverage(t *testing.T) {
	t.Parallel()
	nodes := testenv.StartRedisCluster(t, 3, "--cluster-require-full-coverage", "yes")
	cfg := testConfig(t)
	cfg.RedisAddr = nodes[0].Addr + "," + nodes[1].Addr + "," + nodes[2].Addr
	cfg.RedisCluster = true
	logs := &lockedBuffer{}
	api := launchLogged(t, cfg, nil, true, logs)
	require.Eventually(t, func() bool {
		return strings.Contains(api.Metrics(t), "popup_redis_cluster_full_coverage_nodes 3")
	}, 15*time.Second, 50*time.Millisecond, "the coverage gauge")
	warning := logs.String()
	assert.Contains(t, warning, "level=WARN")
	assert.Contains(t, warning, "cluster-require-full-coverage is yes")
	assert.Contains(t, warning, "every user's GET degrades")
	for _, n := range nodes {
		assert.Contains(t, warning, n.Addr)
	}
	// The operator's status view shows it too.
	res := api.adminDo(t, http.MethodGet, "/admin/v1/status", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	cluster, _ := res.Body["redis_cluster"].(map[string]any)
	assert.Equal(t, "warning", cluster["state"], res.Raw)
	assert.Len(t, cluster["full_coverage_nodes"], 3)
	assert.Equal(t, "warning", res.Body["state"])
}
