package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// TestClusterPassSpansThreeMasters guards the cluster pass of `make test` itself: it must run
// against a healthy three-master cluster, with queue shards landing on different masters (so the
// scripts' one-slot keys are exercised across nodes, not all on one). The single-node pass skips it.
func TestClusterPassSpansThreeMasters(t *testing.T) {
	t.Parallel()
	if !testenv.RedisCluster(t) {
		t.Skip("single-node pass: the cluster pass of scripts/test.sh runs this")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, ok := testenv.Redis(t).(*redis.ClusterClient)
	require.True(t, ok, "several addresses must give a cluster client")

	info, err := cc.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_state:ok")
	shards, err := cc.ClusterShards(ctx).Result()
	require.NoError(t, err)
	require.Len(t, shards, 3, "masters")

	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 8}
	owners := map[string]bool{}
	for shard := range keys.Shards {
		node, err := cc.MasterForKey(ctx, keys.Queue(shard))
		require.NoError(t, err)
		owners[node.Options().Addr] = true
	}
	require.GreaterOrEqual(t, len(owners), 2, "8 queue shards all on one master: %v", owners)
}
