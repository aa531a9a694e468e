package redisstore

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
	"popupsvc/internal/testenv"
)

// clickOf records uid's click with event id id on s, on the state s holds for uid, at the clock
// s has.
func clickOf(t *testing.T, s *UserStore, uid, id string) Outcome {
	t.Helper()
	ctx := context.Background()
	prev, err := s.rdb.Get(ctx, s.keys.User(uid)).Result()
	if err != nil {
		prev = ""
	}
	st, err := DecodeState(prev)
	if prev == "" || err != nil {
		st = popup.UserState{}
	}
	st.DayCount++ // every click writes a new state
	at := s.now().UTC()
	out, err := s.Record(ctx, uid, prev, &st, []event.Event{{ID: id, UID: uid, PopupID: 7, Action: event.Click, At: at}}, true)
	require.NoError(t, err)
	return out
}

// TestEventIDIsAppliedOnceWithinTheRetryWindow: a retry of an action or a conversion within
// RetryWindow of the first try is a duplicate, across a generation's end and from an instance
// whose clock is a few seconds behind the one that took it; a little past the window (from a
// generation's end, where the window is shortest) it is a new action.
func TestEventIDIsAppliedOnceWithinTheRetryWindow(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 4}
	// The start of the next generation.
	b := time.UnixMilli((time.Now().UnixMilli()/RetryWindow.Milliseconds() + 1) * RetryWindow.Milliseconds())
	tests := []struct {
		name      string
		first, at time.Time // the first try's clock, the retry's
		want      Outcome
	}{
		{"in the next generation", b.Add(-time.Second), b.Add(time.Second), popup.Duplicate},
		{"a window later", b.Add(-time.Second), b.Add(RetryWindow - time.Second), popup.Duplicate},
		{"from a clock 3 s behind", b.Add(time.Second), b.Add(-2 * time.Second), popup.Duplicate},
		{"a window and 2 s later", b.Add(-time.Second), b.Add(RetryWindow + time.Second), popup.Recorded},
		{"two windows later", b.Add(-RetryWindow + time.Second), b.Add(RetryWindow + time.Second), popup.Recorded},
	}
	for _, kind := range []string{"action", "conversion"} {
		s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
		try := func(uid, id string, at time.Time) Outcome {
			s.SetClock(func() time.Time { return at })
			if kind == "action" {
				return clickOf(t, s, uid, id)
			}
			got, err := s.RecordConversion(context.Background(), &event.Event{ID: id, UID: uid, Action: event.Conversion, Goal: "g", At: at})
			require.NoError(t, err)
			return got
		}
		for i, tt := range tests {
			uid := "u" + strconv.Itoa(i)
			require.Equal(t, popup.Recorded, try(uid, "evt-1", tt.first), "%s: %s: the first try", kind, tt.name)
			assert.Equal(t, tt.want, try(uid, "evt-1", tt.at), "%s: %s", kind, tt.name)
		}
	}
}

// TestPreviousReleaseMarkersAreHonoured: during a rolling upgrade, and for the day after it, an
// event id the previous release remembered (a key per marker), or the erased marker an erasure
// put in its place, refuses a retry here too, and the retry is remembered in this release's form.
func TestPreviousReleaseMarkersAreHonoured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 4}
	keyed, err := privacy.NewKeyed(strings.Repeat("k", privacy.MinKeyLen))
	require.NoError(t, err)
	s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	s.SetErasedMarkers(keyed)
	// What the previous release left: a marker of u1's click and of u1's conversion, and the
	// erased marker of an erased user's click.
	require.NoError(t, rdb.Set(ctx, keys.EventID("u1", "old-click"), "1", EventIDTTL).Err())
	require.NoError(t, rdb.Set(ctx, keys.ConversionID("u1", "old-order"), "1", EventIDTTL).Err())
	require.NoError(t, rdb.Set(ctx, keys.Erased("u2", keyed.Event("u2", "old-click")), "1", EventIDTTL).Err())

	assert.Equal(t, popup.Duplicate, clickOf(t, s, "u1", "old-click"))
	assert.Equal(t, popup.Duplicate, clickOf(t, s, "u2", "old-click"))
	got, err := s.RecordConversion(ctx, &event.Event{ID: "old-order", UID: "u1", Action: event.Conversion, Goal: "g", At: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, popup.Duplicate, got)
	assert.Equal(t, popup.Recorded, clickOf(t, s, "u1", "new-click"), "a new event id is not held back")

	remembered, err := ActionRemembered(ctx, rdb, keys, keyed, "u1", "old-click", time.Now())
	require.NoError(t, err)
	assert.True(t, remembered, "the retry is remembered in this release's form, for when the old marker is gone")
}

// TestMarkersNameNoUIDAndOutliveAnErasure: with POPUP_PRIVACY_KEY, what remembers an event id
// holds neither the uid nor the event id, so an erasure leaves it, and it still refuses a retry
// of the erased user's old action.
func TestMarkersNameNoUIDAndOutliveAnErasure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.Redis(t)
	keys := Keys{Prefix: testenv.RedisPrefix(t), Shards: 2}
	keyed, err := privacy.NewKeyed(strings.Repeat("z", privacy.MinKeyLen))
	require.NoError(t, err)
	s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
	s.SetErasedMarkers(keyed)
	const uid, id = "erase-me-77", "click-of-erase-me"
	require.Equal(t, popup.Recorded, clickOf(t, s, uid, id))

	e := NewEraser(rdb, keys)
	_, err = e.EraseState(ctx, uid)
	require.NoError(t, err)
	n, err := e.ReplaceMarkers(ctx, uid, func(eventID string) string { return keyed.Event(uid, eventID) })
	require.NoError(t, err)
	assert.Zero(t, n, "no marker of the previous form to replace")
	_, err = e.PurgeQueued(ctx, uid)
	require.NoError(t, err)
	all, err := testenv.RedisKeys(ctx, rdb, keys.Prefix+"*")
	require.NoError(t, err)
	require.NotEmpty(t, all)
	for _, k := range all {
		assert.NotContains(t, k, uid)
		assert.NotContains(t, k, id)
		if rdb.Type(ctx, k).Val() == "hash" {
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				assert.NotContains(t, f+v, uid, "a field of %s names the erased uid", k)
				assert.NotContains(t, f+v, id, "a field of %s names the event id", k)
			}
		}
	}

	assert.Equal(t, popup.Duplicate, clickOf(t, s, uid, id), "the erased user's retry is refused")
}

// BenchmarkMarkerMemory measures what remembering event ids costs Redis (docs/SCALING.md, input
// I; docs/PERFORMANCE.md, "Remembered event ids"), with MEMORY USAGE (SAMPLES 0) of every key,
// over a mix of users: 60% with one click in the window, 25% with two, 10% with three, 5% with
// five; half the uids 36-character UUIDs, half short; every event id a UUID. Each click goes
// through Record. The generation's hashes are as full as they are at 5,000 actions a second
// (the model's 50,000 requests) with MarkerBuckets, and then past Redis's listpack limit; beside
// them the previous release's form (a key per marker) for the same clicks. Run once:
//
//	go test -tags jsoniter,nomsgpack -run '^$' -bench MarkerMemory -benchtime 1x ./internal/redisstore/
func BenchmarkMarkerMemory(b *testing.B) {
	const users = 40_000
	ctx := context.Background()
	rdb := testenv.Redis(b)
	perUser := func(i int) int { return [20]int{12: 2, 13: 2, 14: 2, 15: 2, 16: 2, 17: 3, 18: 3, 19: 5}[i%20] }
	uidOf := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", i*2654435761%(1<<32), i%65536, i%4096, i%4096, i*40503)
		}
		return "user-" + strconv.Itoa(i)
	}
	eventID := func(i, j int) string {
		return fmt.Sprintf("%08x-%04x-4%03x-b%03x-%012x", (i*7+j)*2246822519%(1<<32), j, i%4096, (i+j)%4096, i*131+j)
	}
	events := 0
	for i := range users {
		events += max(perUser(i), 1)
	}
	fullAt5000 := 5000 * RetryWindow.Seconds() / MarkerBuckets // entries a hash ends a generation with
	var limit int
	if v, err := rdb.ConfigGet(ctx, "hash-max-listpack-entries").Result(); err == nil {
		limit, _ = strconv.Atoi(v["hash-max-listpack-entries"])
	}
	for _, fill := range []float64{fullAt5000, 2 * float64(max(limit, 128))} {
		b.Run(fmt.Sprintf("entries=%.0f", fill), func(b *testing.B) {
			for range b.N {
				keys := Keys{Prefix: testenv.RedisPrefix(b), Shards: 1}
				s := NewUserStore(rdb, keys, time.Hour, nil, 1, nil)
				s.markers = newMarkers(keys, defaultMarkerKey, int(float64(events)/fill+0.5))
				now := time.Now()
				s.SetClock(func() time.Time { return now })
				var wg sync.WaitGroup
				errs := make(chan error, 8)
				for w := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := w; i < users; i += 8 {
							uid, prev := uidOf(i), ""
							for j := range max(perUser(i), 1) {
								next := &popup.UserState{DayCount: j + 1}
								ev := []event.Event{{ID: eventID(i, j), UID: uid, PopupID: 7, Action: event.Click, At: now}}
								out, err := s.Record(ctx, uid, prev, next, ev, true)
								if err != nil || out != popup.Recorded {
									errs <- fmt.Errorf("record %s: %v, %v", uid, out, err)
									return
								}
								prev = string(AppendState(nil, next))
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(b, err)
				}
				gen := now.UnixMilli() / s.markers.window
				var bytes, entries, hashes, listpacks int64
				for bucket := range s.markers.buckets {
					key := s.markers.key(0, gen, bucket)
					n, err := rdb.MemoryUsage(ctx, key, 0).Result()
					if err == redis.Nil {
						continue
					}
					require.NoError(b, err)
					bytes += n
					hashes++
					entries += rdb.HLen(ctx, key).Val()
					if rdb.ObjectEncoding(ctx, key).Val() == "listpack" {
						listpacks++
					}
				}
				require.EqualValues(b, events, entries, "every click remembered once")
				// The previous release's form of the same clicks: a key each, for a day.
				var legacy int64
				for i := range users {
					for j := range max(perUser(i), 1) {
						key := keys.EventID(uidOf(i), eventID(i, j))
						require.NoError(b, rdb.Set(ctx, key, "1", EventIDTTL).Err())
						legacy += rdb.MemoryUsage(ctx, key, 0).Val()
						rdb.Del(ctx, key)
					}
				}
				perEvent := float64(bytes) / float64(events)
				b.ReportMetric(perEvent, "B/event")
				b.ReportMetric(perEvent*float64(events)/users, "B/user")
				b.ReportMetric(float64(legacy)/float64(events), "legacy-B/event")
				b.ReportMetric(float64(entries)/float64(hashes), "entries/hash")
				b.ReportMetric(float64(listpacks)/float64(hashes), "listpack-share")
				b.Logf("%d users, %d clicks, %d hashes (limit %d entries): %.1f B an event, %.1f B a user; a key per marker %.1f B an event; at 5,000 actions a second, up to two windows of %s: %.2f GB",
					users, events, hashes, limit, perEvent, perEvent*float64(events)/users, float64(legacy)/float64(events),
					RetryWindow, 2*RetryWindow.Seconds()*5000*perEvent/1e9)
			}
		})
	}
}

// TestAnAcknowledgedEventIDSurvivesAFailover: with POPUP_REDIS_ACK_REPLICAS=1 a click is
// acknowledged once a replica holds it, its remembered event id included; the primary dies, the
// replica is promoted, and the client's retry of that click there is a duplicate, while a new
// click counts.
func TestAnAcknowledgedEventIDSurvivesAFailover(t *testing.T) {
	t.Parallel()
	primary := testenv.StartRedisServer(t)
	host, port, err := net.SplitHostPort(primary.Addr)
	require.NoError(t, err)
	replica := testenv.RedisServer(t, "--replicaof", host, port)
	testenv.WaitReplicaLinked(t, replica)
	keys := Keys{Prefix: "p", Shards: 1}

	pc := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer pc.Close()
	s := NewUserStore(pc, keys, time.Hour, nil, 1, nil)
	s.SetAckReplicas(1, pc)
	require.Equal(t, popup.Recorded, clickOf(t, s, "alice", "before-the-kill"))

	primary.Signal(t, syscall.SIGKILL)
	rc := redis.NewClient(&redis.Options{Addr: replica})
	defer rc.Close()
	require.NoError(t, rc.ReplicaOf(context.Background(), "no", "one").Err())
	promoted := NewUserStore(rc, keys, time.Hour, nil, 1, nil)
	assert.Equal(t, popup.Duplicate, clickOf(t, promoted, "alice", "before-the-kill"), "the retry counted twice")
	assert.Equal(t, popup.Recorded, clickOf(t, promoted, "alice", "after-the-kill"))
}
