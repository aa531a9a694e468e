package redisstore

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/config"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

// BenchmarkClusterPipeline is what one autopipeliner per master (Pipeline) costs against the
// cluster client's own autopipeliner, which it replaced (docs/PERFORMANCE.md): GETs of 1,000
// users' states, 16 goroutines at a time, through the client of NewClient with the service's
// defaults but a patient timeout, on a three-master cluster of the benchmark's own on loopback.
func BenchmarkClusterPipeline(b *testing.B) {
	nodes := testenv.StartRedisCluster(b, 3)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	// A patient timeout: a busy machine must slow the benchmark down, not fail it.
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": strings.Join(addrs, ","), "POPUP_REDIS_TIMEOUT": "1s"})
	require.NoError(b, err)
	keys := Keys{Prefix: "p", Shards: config.ClusterQueueShards}
	const users = 1000
	seed, err := NewClient(OptionsOf(cfg))
	require.NoError(b, err)
	defer seed.Close()
	for i := range users {
		require.NoError(b, seed.Set(context.Background(), keys.User("u"+strconv.Itoa(i)), AppendState(nil, &popup.UserState{Day: 1}), time.Hour).Err())
	}
	tests := []struct {
		name string
		do   func(rdb redis.UniversalClient) (do func(ctx context.Context, key string, cmd redis.Cmder) error, closer func() error)
	}{
		{"cluster autopipeliner", func(rdb redis.UniversalClient) (func(context.Context, string, redis.Cmder) error, func() error) {
			ap, err := rdb.AsyncAutoPipeline()
			require.NoError(b, err)
			return func(ctx context.Context, _ string, cmd redis.Cmder) error {
				return ap.Submit(ctx, cmd).WaitContext(ctx)
			}, ap.Close
		}},
		{"one per master", func(rdb redis.UniversalClient) (func(context.Context, string, redis.Cmder) error, func() error) {
			p, err := NewPipeline(rdb)
			require.NoError(b, err)
			return p.Do, p.Close
		}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			rdb, err := NewClient(OptionsOf(cfg))
			require.NoError(b, err)
			defer rdb.Close()
			do, closer := tt.do(rdb)
			defer closer()
			var seq atomic.Int64
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := keys.User("u" + strconv.FormatInt(seq.Add(1)%users, 10))
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					err := do(ctx, key, redis.NewStringCmd(ctx, "get", key))
					cancel()
					if err != nil {
						b.Errorf("get: %v", err)
						return
					}
				}
			})
		})
	}
}
