package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
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

// BenchmarkShownPopupSteps is the Redis server's CPU for each store call of a shown popup
// (docs/PERFORMANCE.md, "A shown popup in each mode"): the state's GET, then the record script
// (the impression at the GET), or the reserve script and the confirm script (confirm=1); and the
// parts the floor of a confirmed impression is made of (docs/PERFORMANCE.md): a plain SET NX PX
// of a reservation's size, a script that does nothing, and one that makes one SET. Each step
// runs on users of its own (a confirmation on a reservation made before the timer), 64 at a
// time, through the service's client and Pipeline with known users on, against a redis-server of
// the benchmark's own (testenv.RedisServer), whose CPU (INFO cpu) it reports per call as
// redis-cpu-ns/op.
func BenchmarkShownPopupSteps(b *testing.B) {
	addr := testenv.RedisServer(b)
	cfg, err := config.Parse(map[string]string{"POPUP_REDIS_ADDR": addr, "POPUP_REDIS_TIMEOUT": "1s"})
	require.NoError(b, err)
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	require.NoError(b, err)
	defer rdb.Close()
	pipe, err := redisstore.NewPipeline(rdb)
	require.NoError(b, err)
	defer pipe.Close()
	keys := redisstore.Keys{Prefix: "steps", Shards: cfg.Shards()}
	known, err := redisstore.NewKnownUsers(keys, 100000, 0.01)
	require.NoError(b, err)
	store := redisstore.NewUserStore(rdb, keys, time.Hour, nil, 1, pipe)
	store.UseKnownUsers(known, nil)

	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	prev := string(redisstore.AppendState(nil, &popup.UserState{Day: popup.DayNumber(now), DayCount: 1,
		Popups: popup.StatesOf(map[int64]popup.PopupState{1: {Impressions: 1, LastImpressionAt: now.Add(-time.Hour)}})}))
	next := &popup.UserState{Day: popup.DayNumber(now), DayCount: 2,
		Popups: popup.StatesOf(map[int64]popup.PopupState{1: {Impressions: 2, LastImpressionAt: now, NextShowAt: now.Add(time.Hour)}})}
	impression := func(uid string) []event.Event {
		return []event.Event{{ID: "d-" + uid, UID: uid, PopupID: 1, Action: event.Impression, At: now, DecisionID: "d-" + uid,
			Impressions: 2, DayCount: 2}}
	}
	var round atomic.Int64
	steps := []struct {
		name string
		prep func(uid string) error
		step func(uid string) error
	}{
		{"get", nil, func(uid string) error { _, err := store.Get(ctx, uid, now); return err }},
		{"record", nil, func(uid string) error {
			return want(store.Record(ctx, uid, prev, next, impression(uid), false))
		}},
		{"reserve", nil, func(uid string) error {
			return want(store.Reserve(ctx, uid, prev, next, "d-"+uid, 1, impression(uid), time.Hour))
		}},
		{"confirm", func(uid string) error {
			return want(store.Reserve(ctx, uid, prev, next, "d-"+uid, 1, impression(uid), time.Hour))
		}, func(uid string) error { return want(store.Confirm(ctx, uid, "d-"+uid, 1)) }},
		{"set nx", nil, func(uid string) error {
			key := keys.Reservation(uid)
			return pipe.Do(ctx, key, redis.NewStatusCmd(ctx, "set", key, reservationSized, "nx", "px", 30000))
		}},
		{"empty script", nil, func(uid string) error {
			key := keys.Reservation(uid)
			return pipe.Do(ctx, key, redis.NewCmd(ctx, "evalsha", emptyScript.Hash(), 4, key, key, key, key, "a", 1, 2, 0))
		}},
		{"one-SET script", nil, func(uid string) error {
			key := keys.Reservation(uid)
			return pipe.Do(ctx, key, redis.NewCmd(ctx, "evalsha", oneSetScript.Hash(), 4, key, key, key, key, "a", 30000, 2, 0))
		}},
	}
	for _, sc := range []*redis.Script{emptyScript, oneSetScript} {
		require.NoError(b, sc.Load(ctx, rdb).Err())
	}
	for _, tt := range steps {
		b.Run(tt.name, func(b *testing.B) {
			uids := make([]string, b.N)
			r := strconv.FormatInt(round.Add(1), 10)
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range uids {
					uids[i] = "u" + r + "-" + strconv.Itoa(i)
					p.Set(ctx, keys.User(uids[i]), prev, time.Hour)
				}
				return nil
			})
			require.NoError(b, err)
			if tt.prep != nil {
				// 64 at a time, as the steps run.
				var taken, failed atomic.Int64
				var wg sync.WaitGroup
				for range 64 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := taken.Add(1) - 1; i < int64(len(uids)); i = taken.Add(1) - 1 {
							if tt.prep(uids[i]) != nil {
								failed.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				require.Zero(b, failed.Load())
			}
			var seq, failed atomic.Int64
			b.SetParallelism(32) // 64 goroutines on 2 cores
			began := testenv.RedisCPU(b, rdb)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if tt.step(uids[seq.Add(1)-1]) != nil {
						failed.Add(1)
					}
				}
			})
			b.StopTimer()
			require.Zero(b, failed.Load())
			b.ReportMetric(float64(testenv.RedisCPU(b, rdb)-began)/float64(b.N), "redis-cpu-ns/op")
		})
	}
}

// The floor's parts in BenchmarkShownPopupSteps: a value of the size of the benchmark's
// reservations (two states and an impression event: 236 bytes), a script that does nothing and
// one that makes one SET.
var (
	reservationSized = strings.Repeat("r", 236)
	emptyScript      = redis.NewScript(`return 0`)
	oneSetScript     = redis.NewScript(`redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 0`)
)

// want is nil for a Recorded outcome.
func want(out popup.Outcome, err error) error {
	if err == nil && out != popup.Recorded {
		return errNotRecorded
	}
	return err
}

var errNotRecorded = errors.New("not recorded")
