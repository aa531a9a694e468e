package redisstore

import (
	"context"
	"fmt"
	"net"
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

// TestRecordIsAcknowledgedOnlyOnceReplicasHoldIt is POPUP_REDIS_ACK_REPLICAS against a real
// primary and replica, the replica's link 20 ms late: an acknowledged record is on the replica at
// once; too few replicas, or a link that is down, is ErrNotReplicated (never an acknowledgement);
// and a replay of an event whose first recording was not acknowledged waits for that recording
// to reach the replica before it is acknowledged as a duplicate.
func TestRecordIsAcknowledgedOnlyOnceReplicasHoldIt(t *testing.T) {
	t.Parallel()
	primary := testenv.RedisServer(t)
	link := testenv.NewProxy(t, primary)
	link.SetDelay(20 * time.Millisecond)
	host, port, err := net.SplitHostPort(link.Addr())
	require.NoError(t, err)
	replica := testenv.RedisServer(t, "--replicaof", host, port)
	testenv.WaitReplicaLinked(t, replica)
	pc := redis.NewClient(&redis.Options{Addr: primary})
	defer pc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replica})
	defer rc.Close()

	keys := Keys{Prefix: "p", Shards: 1}
	s := NewUserStore(pc, keys, time.Hour, nil, 1, nil)
	s.SetAckReplicas(1, pc)
	uid := "alice"
	record := func(id string, within time.Duration) (Outcome, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		prev, err := pc.Get(ctx, keys.User(uid)).Result()
		if err == redis.Nil {
			prev, err = "", nil
		}
		require.NoError(t, err)
		evs := []event.Event{{ID: id, UID: uid, PopupID: 7, Action: event.Click, At: time.Now().UTC()}}
		return s.Record(ctx, uid, prev, &popup.UserState{Day: 1}, evs, true)
	}
	onReplica := func(id string) int64 {
		t.Helper()
		n, err := rc.Exists(context.Background(), keys.User(uid)).Result()
		require.NoError(t, err)
		marked, err := ActionRemembered(context.Background(), rc, keys, nil, uid, id, time.Now())
		require.NoError(t, err)
		if marked {
			n++
		}
		return n
	}

	out, err := record("e1", 2*time.Second)
	require.NoError(t, err)
	assert.Equal(t, popup.Recorded, out)
	assert.EqualValues(t, 2, onReplica("e1"), "acknowledged, yet the replica lacks the state or the marker")

	s.SetAckReplicas(2, pc)
	start := time.Now()
	_, err = record("e2", 150*time.Millisecond)
	assert.ErrorIs(t, err, ErrNotReplicated, "two replicas asked for, one exists")
	assert.Less(t, time.Since(start), time.Second, "WAIT outlived the caller's budget")

	s.SetAckReplicas(1, pc)
	link.SetDown(true)
	_, err = record("e3", 150*time.Millisecond)
	assert.ErrorIs(t, err, ErrNotReplicated, "the replica's link is down")
	assert.EqualValues(t, 1, onReplica("e3"), "the replica holds the state but must not hold e3's marker yet")
	// The replay comes on another connection, as a client's retry would reach another instance.
	other := redis.NewClient(&redis.Options{Addr: primary})
	defer other.Close()
	s.SetAckReplicas(1, other)
	// The retry comes a generation later: it must remember the event id again, in its own.
	later := time.Now().Add(RetryWindow)
	s.SetClock(func() time.Time { return later })
	link.SetDown(false)
	out, err = record("e3", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, popup.Duplicate, out)
	m := s.markers.ref(markerAction, uid, "e3", later)
	again, err := pc.HExists(context.Background(), m.gens[1], m.field).Result()
	require.NoError(t, err)
	assert.True(t, again, "a replay remembers its event id in its own generation (the write its WAIT waits for)")
	assert.EqualValues(t, 2, onReplica("e3"), "a duplicate was acknowledged before its first recording reached the replica")
}

// BenchmarkRecordAck is what POPUP_REDIS_ACK_REPLICAS=1 costs a record (docs/PERFORMANCE.md):
// clicks of distinct users, 16 at a time, recorded through the autopipeliner on the primary's
// word alone (replicas=0), and on their own connections each followed by a WAIT for the replica
// (replicas=1), against a primary and a replica of the benchmark's own on loopback.
func BenchmarkRecordAck(b *testing.B) {
	primary := testenv.RedisServer(b)
	host, port, err := net.SplitHostPort(primary)
	require.NoError(b, err)
	testenv.WaitReplicaLinked(b, testenv.RedisServer(b, "--replicaof", host, port))
	keys := Keys{Prefix: "p", Shards: 1}
	now := time.Now().UTC()
	var seq atomic.Int64
	for _, replicas := range []int{0, 1} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			pc := redis.NewClient(&redis.Options{Addr: primary, PoolSize: 64})
			defer pc.Close()
			pipe, err := NewPipeline(pc)
			require.NoError(b, err)
			defer pipe.Close()
			s := NewUserStore(pc, keys, time.Hour, nil, 1, pipe)
			if replicas > 0 {
				s.SetAckReplicas(replicas, pc)
			}
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					uid := "u" + strconv.FormatInt(seq.Add(1), 10)
					evs := []event.Event{{ID: uid, UID: uid, PopupID: 1, Action: event.Click, At: now}}
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					out, err := s.Record(ctx, uid, "", &popup.UserState{Day: 1}, evs, true)
					cancel()
					if err != nil || out != popup.Recorded {
						b.Errorf("record: %v %v", out, err)
						return
					}
				}
			})
		})
	}
}
