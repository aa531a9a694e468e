package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

type queueFixture struct {
	q    *redisstore.Queue
	keys redisstore.Keys
	ctx  context.Context
	t    *testing.T
}

func newQueue(t *testing.T, lease time.Duration) queueFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(t), Shards: 2}
	return queueFixture{q: redisstore.NewQueue(testenv.Redis(t), keys, lease), keys: keys, ctx: ctx, t: t}
}

func (f queueFixture) push(shard int, items ...string) {
	f.t.Helper()
	args := make([]any, len(items))
	for i, it := range items {
		args[i] = it
	}
	require.NoError(f.t, testenv.Redis(f.t).RPush(f.ctx, f.keys.Queue(shard), args...).Err())
}

func (f queueFixture) list(key string) []string {
	f.t.Helper()
	v, err := testenv.Redis(f.t).LRange(f.ctx, key, 0, -1).Result()
	require.NoError(f.t, err)
	return v
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func TestQueueClaimMovesHeadToProcessingList(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	f.push(1, "a", "b", "c", "d", "e")

	got, err := f.q.Claim(f.ctx, 1, "w1", 3)
	require.NoError(t, err)

	assert.Equal(t, []string{"a", "b", "c"}, got)
	assert.Equal(t, []string{"d", "e"}, f.list(f.keys.Queue(1)))
	assert.Equal(t, []string{"a", "b", "c"}, f.list(f.keys.Processing(1, "w1")))
	workers, err := f.q.Workers(f.ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"w1"}, workers)
	ttl, err := testenv.Redis(t).PTTL(f.ctx, f.keys.Lease(1, "w1")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 50*time.Second, "claim refreshes the lease")
	assert.Empty(t, f.list(f.keys.Queue(0)), "other shards untouched")
}

func TestQueueClaimOnEmptyQueueReturnsNothing(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)

	got, err := f.q.Claim(f.ctx, 0, "w1", 10)
	require.NoError(t, err)

	assert.Empty(t, got)
	workers, err := f.q.Workers(f.ctx, 0)
	require.NoError(t, err)
	assert.Empty(t, workers, "a worker holding nothing is not registered")
}

func TestQueueClaimLargerThanLuaStackLimit(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	items := seq("e", 9000)
	f.push(0, items...)

	got, err := f.q.Claim(f.ctx, 0, "w1", 9000)
	require.NoError(t, err)

	assert.Equal(t, items, got)
	assert.Equal(t, items, f.list(f.keys.Processing(0, "w1")))
}

func TestQueueAckRemovesAcknowledgedHead(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	f.push(0, "a", "b", "c")
	_, err := f.q.Claim(f.ctx, 0, "w1", 3)
	require.NoError(t, err)

	require.NoError(t, f.q.Ack(f.ctx, 0, "w1", 2))

	pending, err := f.q.Pending(f.ctx, 0, "w1", 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, pending)
	workers, err := f.q.Workers(f.ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"w1"}, workers, "registered while it holds events")
	require.NoError(t, f.q.Ack(f.ctx, 0, "w1", 1))
	pending, err = f.q.Pending(f.ctx, 0, "w1", 10)
	require.NoError(t, err)
	assert.Empty(t, pending)
	workers, err = f.q.Workers(f.ctx, 0)
	require.NoError(t, err)
	assert.Empty(t, workers, "unregistered once it holds nothing")
}

func TestQueuePendingIsBoundedAndOldestFirst(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	f.push(0, "a", "b", "c")
	_, err := f.q.Claim(f.ctx, 0, "w1", 3)
	require.NoError(t, err)

	pending, err := f.q.Pending(f.ctx, 0, "w1", 2)
	require.NoError(t, err)

	assert.Equal(t, []string{"a", "b"}, pending)
}

func TestQueueReclaimRefusesAWorkerWithALiveLease(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	f.push(0, "a", "b")
	_, err := f.q.Claim(f.ctx, 0, "w1", 2)
	require.NoError(t, err)

	n, err := f.q.Reclaim(f.ctx, 0, "w1")

	require.ErrorIs(t, err, redisstore.ErrLeaseAlive)
	assert.Zero(t, n)
	assert.Equal(t, []string{"a", "b"}, f.list(f.keys.Processing(0, "w1")))
}

func TestQueueReclaimReturnsADeadWorkersEventsToTheHeadInOrder(t *testing.T) {
	t.Parallel()
	f := newQueue(t, 100*time.Millisecond)
	f.push(0, "a", "b", "c", "d")
	_, err := f.q.Claim(f.ctx, 0, "dead", 3)
	require.NoError(t, err)
	f.push(0, "e")
	rdb := testenv.Redis(t)
	require.Eventually(t, func() bool { // the lease expires
		return rdb.Exists(f.ctx, f.keys.Lease(0, "dead")).Val() == 0
	}, 5*time.Second, 10*time.Millisecond, "the dead worker's lease never expired")

	n, err := f.q.Reclaim(f.ctx, 0, "dead")
	require.NoError(t, err)

	assert.Equal(t, 3, n)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, f.list(f.keys.Queue(0)))
	assert.Empty(t, f.list(f.keys.Processing(0, "dead")))
	workers, err := f.q.Workers(f.ctx, 0)
	require.NoError(t, err)
	assert.Empty(t, workers)
}

func TestQueueReleaseReturnsOwnListAtOnce(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	f.push(0, "a", "b", "c")
	_, err := f.q.Claim(f.ctx, 0, "w1", 2)
	require.NoError(t, err)

	n, err := f.q.Release(f.ctx, 0, "w1")
	require.NoError(t, err)

	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"a", "b", "c"}, f.list(f.keys.Queue(0)))
	exists, err := testenv.Redis(t).Exists(f.ctx, f.keys.Lease(0, "w1")).Result()
	require.NoError(t, err)
	assert.Zero(t, exists, "lease dropped")
}

func TestQueueDeadLetterMovesOneEventWithItsReason(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	garbage := "\xff\xfe not json"
	f.push(0, "good1", garbage, "good2")
	_, err := f.q.Claim(f.ctx, 0, "w1", 3)
	require.NoError(t, err)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	moved, err := f.q.DeadLetter(f.ctx, 0, "w1", garbage, "undecodable event: bad json", now)
	require.NoError(t, err)

	assert.True(t, moved)
	assert.Equal(t, []string{"good1", "good2"}, f.list(f.keys.Processing(0, "w1")))
	dead, err := f.q.DeadLetters(f.ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, []byte(garbage), dead[0].Bytes(), "non-UTF-8 bytes survive")
	assert.Equal(t, "undecodable event: bad json", dead[0].Reason)
	assert.True(t, now.Equal(dead[0].At))
}

func TestQueueDeadLetterOfAnEventNoLongerHeldDoesNothing(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)

	moved, err := f.q.DeadLetter(f.ctx, 0, "w1", "gone", "whatever", time.Now())
	require.NoError(t, err)

	assert.False(t, moved)
	assert.Empty(t, f.list(f.keys.Dead(0)))
}

func TestQueueStatsReportsSizesAndOldestEventAge(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)
	at := time.Date(2026, 5, 6, 7, 8, 9, 123e6, time.UTC)
	ev := event.Event{ID: "e1", UID: "u1", PopupID: 1, Action: event.Click, At: at}
	f.push(0, "c1", "c2", "c3")
	_, err := f.q.Claim(f.ctx, 0, "w1", 2)
	require.NoError(t, err)
	_, err = f.q.Claim(f.ctx, 0, "w2", 1)
	require.NoError(t, err)
	f.push(0, string(event.Append(nil, &ev)), "x")
	_, err = f.q.DeadLetter(f.ctx, 0, "w1", "c1", "test", at)
	require.NoError(t, err)

	st, err := f.q.Stats(f.ctx, 0)
	require.NoError(t, err)

	assert.Equal(t, int64(2), st.Length)
	assert.True(t, at.Equal(st.OldestAt), "oldest %v", st.OldestAt)
	assert.Equal(t, map[string]int64{"w1": 1, "w2": 1}, st.Processing)
	assert.Equal(t, int64(2), st.ProcessingTotal())
	assert.Equal(t, int64(1), st.Dead)
}

func TestQueueStatsOfAnEmptyShard(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Minute)

	st, err := f.q.Stats(f.ctx, 1)
	require.NoError(t, err)

	assert.Zero(t, st.Length)
	assert.True(t, st.OldestAt.IsZero())
	assert.Zero(t, st.ProcessingTotal())
	assert.Zero(t, st.Dead)
}

// TestQueueStatsNeverLosesEventsInFlight moves a fixed set of events between the queue and
// several workers' processing lists (claims, and releases and reclaims back to the queue, which
// together never add or remove an event) while Stats is read in a loop: every read must count
// all of them. A read in several round trips could see an event in neither place, and a busy
// queue as drained.
func TestQueueStatsNeverLosesEventsInFlight(t *testing.T) {
	t.Parallel()
	f := newQueue(t, time.Millisecond) // leases expire at once: every worker is reclaimable
	const total, movers, moves, reads = 60, 3, 300, 300
	f.push(0, seq("e", total)...)

	var wg sync.WaitGroup
	errs := make(chan error, movers)
	for m := range movers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := fmt.Sprintf("w%d", m)
			for i := range moves {
				if _, err := f.q.Claim(f.ctx, 0, w, 1+i%7); err != nil {
					errs <- err
					return
				}
				var err error
				if i%2 == 0 {
					_, err = f.q.Release(f.ctx, 0, w)
				} else {
					_, err = f.q.Reclaim(f.ctx, 0, w)
				}
				if err != nil && !errors.Is(err, redisstore.ErrLeaseAlive) {
					errs <- err
					return
				}
			}
		}()
	}
	var short []int64
	for range reads {
		st, err := f.q.Stats(f.ctx, 0)
		require.NoError(t, err)
		if n := st.Length + st.ProcessingTotal(); n != total {
			short = append(short, n)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Empty(t, short, "reads that did not count all %d events", total)
	st, err := f.q.Stats(f.ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(total), st.Length+st.ProcessingTotal(), "the moves kept every event")
}
