package redisstore

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

// TestRecordConversionAppliesOnce queues conversions on a real Redis: once per (uid, event id),
// in their own namespace (an action's event id is another), within the action rate limit.
func TestRecordConversionAppliesOnce(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 4}
	s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	s.SetActionRateLimit(3)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	conv := func(uid, id string) *event.Event {
		return &event.Event{ID: id, UID: uid, Action: event.Conversion, Goal: "purchase", Value: 9.5, At: at}
	}
	tests := []struct {
		uid, id string
		want    Outcome
	}{
		{"u1", "o1", popup.Recorded},
		{"u1", "o1", popup.Duplicate},
		{"u2", "o1", popup.Recorded}, // another user's o1
		{"u1", "o2", popup.Recorded},
		{"u1", "o3", popup.Recorded},
		{"u1", "o4", popup.RateLimited}, // a fourth in the minute
	}
	for _, tt := range tests {
		got, err := s.RecordConversion(ctx, conv(tt.uid, tt.id))
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%s/%s", tt.uid, tt.id)
	}
	raws, err := rdb.LRange(ctx, keys.Queue(keys.Shard("u1")), 0, -1).Result()
	require.NoError(t, err)
	var mine []event.Event
	for _, raw := range raws {
		ev, err := event.Decode([]byte(raw))
		require.NoError(t, err)
		if ev.UID == "u1" {
			mine = append(mine, ev)
		}
	}
	require.Len(t, mine, 3, "o1, o2 and o3 of u1, each once")
	assert.Equal(t, *conv("u1", "o1"), mine[0])
	_, err = s.RecordConversion(ctx, &event.Event{ID: "c", UID: "u3", Action: event.Click, PopupID: 1, At: at})
	assert.Error(t, err, "only conversions")
}

// noState is the durable source of a user who has none (a benchmark's first visit).
type noState struct{}

func (noState) Load(context.Context, string, time.Time) (popup.UserState, error) {
	return popup.UserState{}, nil
}

// BenchmarkIngest is conversion ingest against the action path on one real Redis
// (docs/PERFORMANCE.md, "Conversions"): an action reads the user's state and runs the record
// script; a conversion runs its one script. 10,000 users, each event a new event id, 16 at a
// time, through the autopipeliner, as popup-api does.
func BenchmarkIngest(b *testing.B) {
	addr := testenv.RedisServer(b)
	keys := Keys{Prefix: "p", Shards: 16}
	now := time.Now().UTC()
	var seq atomic.Int64
	for _, kind := range []string{"action", "conversion"} {
		b.Run(kind, func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
			defer rdb.Close()
			pipe, err := NewPipeline(rdb)
			require.NoError(b, err)
			defer pipe.Close()
			s := NewUserStore(rdb, keys, time.Hour, noState{}, 4, pipe)
			s.SetActionRateLimit(1 << 30) // counted, never reached
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					uid, id := "u"+strconv.FormatInt(n%10000, 10), "e"+strconv.FormatInt(n, 10)
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					var (
						out Outcome
						err error
					)
					if kind == "action" {
						var st popup.StoredState
						if st, err = s.Get(ctx, uid, now); err == nil {
							evs := []event.Event{{ID: id, UID: uid, PopupID: 1, Action: event.Click, At: now}}
							out, err = s.Record(ctx, uid, st.Raw, &popup.UserState{Day: 1}, evs, true)
						}
					} else {
						out, err = s.RecordConversion(ctx, &event.Event{ID: id, UID: uid, Action: event.Conversion, Goal: "purchase", Value: 1, At: now})
					}
					cancel()
					// (two goroutines on one user: the action's record may meet a Conflict, which
					// popup-api would retry; it costs the same round trips)
					if err != nil || out != popup.Recorded && out != popup.Conflict {
						b.Errorf("%s: %v %v", kind, out, err)
						return
					}
				}
			})
		})
	}
}
