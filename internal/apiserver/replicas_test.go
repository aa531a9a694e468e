package apiserver_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// TestAcknowledgementsWaitForReplicas is POPUP_REDIS_ACK_REPLICAS=1 end to end, against a primary
// and a replica of the test's own: a click is acknowledged (202) and a popup shown while the
// replica keeps up; with the replica's link down, the click answers 503 with Retry-After (never a
// 202 that was not replicated) and the GET degrades; the client's retry of the same event, once
// the link is back, is acknowledged.
func TestAcknowledgementsWaitForReplicas(t *testing.T) {
	// The replicated GET must finish its WAIT within the budget: a timing of the shared machine,
	// which missed 1 s once beside four test packages at load 20.
	testenv.Timed(t)
	t.Parallel()
	primary := testenv.RedisServer(t)
	link := testenv.NewProxy(t, primary)
	host, port, err := net.SplitHostPort(link.Addr())
	require.NoError(t, err)
	replicaAddr := testenv.RedisServer(t, "--replicaof", host, port)
	testenv.WaitReplicaLinked(t, replicaAddr)
	replica := redis.NewClient(&redis.Options{Addr: replicaAddr})
	defer replica.Close()

	cfg := testConfig(t)
	cfg.RedisAddr, cfg.RedisCluster, cfg.QueueShards = primary, false, 0
	cfg.RedisAckReplicas = 1
	// A WAIT that cannot succeed takes the whole budget, so it is not the default; but one that
	// can must never miss it on a loaded test machine (300 ms did once under make test).
	cfg.RequestBudget = time.Second
	api := start(t, cfg, nil)
	id := api.createPopup(t, popupSpec("replicated", nil))
	const query = "platform=ios&app_version=1&uid="
	shown, _ := api.get(t, query+"u1")
	assert.Equal(t, id, shown, "a replicated impression shows its popup")
	click := map[string]any{"uid": "u1", "action": "click", "event_id": "k1"}
	res := api.action(t, id, click)
	assert.Equal(t, http.StatusAccepted, res.Status, res.Raw)

	link.SetDown(true)
	shown, res = api.get(t, query+"u2")
	assert.Zero(t, shown, "an impression no replica holds must not be shown")
	assert.Equal(t, "1", res.Header.Get("X-Popup-Degraded"))
	click["event_id"] = "k2"
	res = api.action(t, id, click)
	require.Equal(t, http.StatusServiceUnavailable, res.Status, res.Raw)
	assert.NotEmpty(t, res.Header.Get("Retry-After"), "a 503 without Retry-After")
	assert.NotEmpty(t, res.Body["error"], "a 503 without a JSON error")

	link.SetDown(false)
	deadline := time.Now().Add(15 * time.Second)
	for {
		res = api.action(t, id, click) // the client's retry: same event id
		if res.Status == http.StatusAccepted {
			break
		}
		require.Equal(t, http.StatusServiceUnavailable, res.Status, res.Raw)
		require.False(t, time.Now().After(deadline), "the retried click was never acknowledged after the link came back")
		time.Sleep(100 * time.Millisecond)
	}
	marked, err := redisstore.ActionRemembered(context.Background(), replica, redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: 1}, nil, "u1", "k2", time.Now())
	require.NoError(t, err)
	assert.True(t, marked, "acknowledged, yet the replica lacks the click")
}
