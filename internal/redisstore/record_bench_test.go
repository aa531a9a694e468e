package redisstore_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/config"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// BenchmarkImpressionPath is the Redis side of the homepage's impression path as popup-api runs
// it (docs/PERFORMANCE.md, "The record path's CPU"): a returning user's state read, then the
// check-and-record script writing the next state and queueing one impression, 64 users at a
// time (make bench's connections), through the client of NewClient and the Pipeline with the service's defaults (known
// users on), against the test Redis (a cluster when it has several seeds). Beside ns/op it
// reports this process's CPU per impression (cpu-ns/op): what the API pays on the path, which
// the Redis server's own CPU does not enter and a busy machine inflates less than the wall clock.
func BenchmarkImpressionPath(b *testing.B) {
	addr := testenv.RedisAddr(b)
	// A patient timeout: a busy machine must slow the benchmark down, not fail it.
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": addr, "POPUP_REDIS_TIMEOUT": "1s"})
	require.NoError(b, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(b, err)
	defer rdb.Close()
	pipe, err := redisstore.NewPipeline(rdb)
	require.NoError(b, err)
	defer pipe.Close()
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(b), Shards: cfg.Shards()}
	known, err := redisstore.NewKnownUsers(keys, 100000, 0.01)
	require.NoError(b, err)

	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const users = 10000
	uids := make([]string, users)
	for i := range uids {
		uids[i] = "bench-user-" + strconv.Itoa(i)
	}
	for _, recent := range []bool{false, true} {
		name := "read then record"
		if recent {
			name = "recent state then record" // POPUP_RECENT_STATE_CACHE_SIZE: the GET only after a conflict
		}
		b.Run(name, func(b *testing.B) {
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, uid := range uids {
					st := popup.UserState{Day: popup.DayNumber(now), DayCount: 1, Popups: popup.StatesOf(map[int64]popup.PopupState{
						1: {Impressions: 1, LastImpressionAt: now.Add(-time.Hour)}})}
					p.Set(ctx, keys.User(uid), redisstore.AppendState(nil, &st), time.Hour)
				}
				return nil
			})
			require.NoError(b, err)
			s := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, pipe)
			s.UseKnownUsers(known, nil)
			if recent {
				s.RememberRecorded(users)
			}
			var seq, conflicts atomic.Int64
			b.SetParallelism(32) // 64 goroutines on 2 cores: make bench's 64 connections
			b.ReportAllocs()
			began := testenv.ProcessCPU(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					uid := uids[n%users]
					rctx, cancel := context.WithTimeout(ctx, time.Second)
					out, err := impression(rctx, s, uid, now, n, recent)
					cancel()
					if err != nil {
						b.Errorf("impression: %v", err)
						return
					}
					if out == popup.Conflict { // two goroutines on one user: as in the service, no error
						conflicts.Add(1)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(testenv.ProcessCPU(b)-began)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
		})
	}
}

// impression records one more impression of popup 1 for uid as decide.Decide does: on the state
// remembered from this store's last record when recent is set and there is one, else (and after
// a conflict on it) on the state read.
func impression(ctx context.Context, s *redisstore.UserStore, uid string, now time.Time, n int64, recent bool) (popup.Outcome, error) {
	st, ok := popup.StoredState{}, false
	if recent {
		st, ok = s.Recent(uid)
	}
	for try := 0; try < 2; try++ {
		if !ok || try > 0 {
			var err error
			if st, err = s.Get(ctx, uid, now); err != nil {
				return 0, err
			}
		}
		ps := st.UserState.Popups.Get(1)
		ps.Impressions++
		ps.LastImpressionAt = now
		st.UserState.Popups.Set(1, ps)
		st.UserState.DayCount++
		id := "d-" + strconv.FormatInt(n, 36)
		evs := []event.Event{{ID: id, UID: uid, PopupID: 1, Action: event.Impression, At: now,
			DecisionID: id, Impressions: ps.Impressions, DayCount: st.UserState.DayCount}}
		out, err := s.Record(ctx, uid, st.Raw, &st.UserState, evs, false)
		if err != nil || out != popup.Conflict || !ok {
			return out, err
		}
	}
	return popup.Conflict, nil
}

// BenchmarkFirstVisitPath is the Redis side of a first visit (make bench's run E, and most of
// the revisit mix of run J): the state read that misses, the known-users check that answers
// "new", then the record script writing the first state, queueing the impression and adding the
// uid to the filter; 64 users at a time, each op a uid never seen before. cpu-ns/op as in
// BenchmarkImpressionPath; allocs/op is what the API allocates on the path.
func BenchmarkFirstVisitPath(b *testing.B) {
	addr := testenv.RedisAddr(b)
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": addr, "POPUP_REDIS_TIMEOUT": "1s"})
	require.NoError(b, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(b, err)
	defer rdb.Close()
	pipe, err := redisstore.NewPipeline(rdb)
	require.NoError(b, err)
	defer pipe.Close()
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(b), Shards: cfg.Shards()}
	known, err := redisstore.NewKnownUsers(keys, 1000000, 0.01)
	require.NoError(b, err)
	ctx := context.Background()
	for shard := range max(keys.Shards, 1) { // an empty filter, complete: every unseen uid is new
		r, err := known.BeginRebuild(ctx, rdb, shard, 60000)
		require.NoError(b, err)
		require.NotNil(b, r)
		ok, err := r.Finish(ctx)
		require.NoError(b, err)
		require.True(b, ok)
	}
	s := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, pipe)
	s.UseKnownUsers(known, nil)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var seq atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	began := testenv.ProcessCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			uid := "fv-" + strconv.FormatInt(n, 36)
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := s.Get(rctx, uid, now)
			if err == nil {
				var out popup.Outcome
				id := "d-" + strconv.FormatInt(n, 36)
				evs := []event.Event{{ID: id, UID: uid, PopupID: 1, Action: event.Impression, At: now, DecisionID: id, Impressions: 1, DayCount: 1}}
				st.UserState.Popups = popup.StatesOf(map[int64]popup.PopupState{1: {Impressions: 1, LastImpressionAt: now}})
				st.UserState.Day, st.UserState.DayCount = popup.DayNumber(now), 1
				out, err = s.Record(rctx, uid, st.Raw, &st.UserState, evs, false)
				if err == nil && out != popup.Recorded {
					b.Errorf("first visit of %s: %v", uid, out)
				}
			}
			cancel()
			if err != nil {
				b.Errorf("first visit: %v", err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(testenv.ProcessCPU(b)-began)/float64(b.N), "cpu-ns/op")
}
