package decide_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/config"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/testenv"
)

// BenchmarkShownPopup is what one shown popup costs in each mode of docs/CONTRACT.md §2
// (docs/PERFORMANCE.md, "A shown popup in each mode"): "impression at the GET" is Decide (state
// read, record script); "confirmed" is Reserve (state read, reserve script) then Confirm (the
// confirm script), what a confirm=1 GET and its impression action cost past HTTP. A returning
// user sees a popup that is never hidden (reshow 0), 64 goroutines at a time, through the
// service's client and Pipeline with known users on, against a redis-server of its own
// (testenv.RedisServer) so that the server's CPU (INFO cpu) is the benchmark's alone. It reports
// per shown popup this process's CPU (cpu-ns/shown: the decision and the Redis client) and the
// Redis server's (redis-cpu-ns/shown).
func BenchmarkShownPopup(b *testing.B) {
	addr := testenv.RedisServer(b)
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": addr, "POPUP_REDIS_TIMEOUT": "1s"})
	require.NoError(b, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(b, err)
	defer rdb.Close()
	pipe, err := redisstore.NewPipeline(rdb)
	require.NoError(b, err)
	defer pipe.Close()
	keys := redisstore.Keys{Prefix: "bench", Shards: cfg.Shards()}
	known, err := redisstore.NewKnownUsers(keys, 100000, 0.01)
	require.NoError(b, err)
	store := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, pipe)
	store.UseKnownUsers(known, nil)

	holder := &snapshot.Holder{}
	s := snapshot.BuildWith(1, []popup.Popup{active(1, func(p *popup.Popup) { p.ReshowAfterSeconds = 0 })}, t0, popup.LinkSchemes{}, nil)
	require.Empty(b, s.Problems)
	require.True(b, holder.Store(s))
	d := &decide.Decider{Snapshots: holder, Users: store, Reservations: store, Breakers: breaker.NewSet(1, 1000, time.Second, nil),
		Budget: time.Second}

	ctx := context.Background()
	const users = 10000
	uids := make([]string, users)
	for i := range uids {
		uids[i] = "bench-user-" + strconv.Itoa(i)
	}
	for _, confirmed := range []bool{false, true} {
		name := "impression at the GET"
		if confirmed {
			name = "confirmed"
		}
		b.Run(name, func(b *testing.B) {
			require.NoError(b, rdb.FlushAll(ctx).Err())
			// Every user returning, with one impression of the popup already.
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, uid := range uids {
					st := popup.UserState{Day: popup.DayNumber(t0), DayCount: 1, Popups: popup.StatesOf(map[int64]popup.PopupState{
						1: {Impressions: 1, LastImpressionAt: t0.Add(-time.Hour)}})}
					p.Set(ctx, keys.User(uid), redisstore.AppendState(nil, &st), time.Hour)
				}
				return nil
			})
			require.NoError(b, err)
			var seq, shown, failed atomic.Int64
			b.SetParallelism(32) // 64 goroutines on 2 cores: make bench's 64 connections
			b.ReportAllocs()
			began, redisBegan := testenv.ProcessCPU(b), testenv.RedisCPU(b, rdb)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					req := iosReq
					req.UID = uids[n%users]
					now := t0.Add(time.Duration(n) * time.Microsecond)
					if !confirmed {
						if d.Decide(ctx, req, now).Kind == decide.Shown {
							shown.Add(1)
						}
						continue
					}
					a := d.Reserve(ctx, req, now)
					if a.Kind != decide.Shown {
						continue // another goroutine holds this user's reservation
					}
					if err := d.Confirm(ctx, req.UID, 1, a.DecisionID, now); err != nil {
						failed.Add(1)
						continue
					}
					shown.Add(1)
				}
			})
			b.StopTimer()
			require.Zero(b, failed.Load(), "confirmations refused")
			require.NotZero(b, shown.Load())
			per := float64(shown.Load())
			b.ReportMetric(float64(testenv.ProcessCPU(b)-began)/per, "cpu-ns/shown")
			b.ReportMetric(float64(testenv.RedisCPU(b, rdb)-redisBegan)/per, "redis-cpu-ns/shown")
			b.ReportMetric(per/float64(b.N), "shown/op")
		})
	}
}
