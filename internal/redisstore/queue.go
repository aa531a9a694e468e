package redisstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Queue is the consumer side of the event queue: at-least-once delivery through a processing
// list per worker and shard.
//
// A worker claims a batch (moved atomically from the head of the shard's queue to the tail of its
// processing list), writes it, and only then acknowledges it (trims it off the processing list).
// A worker killed at any instant therefore leaves every event in the queue, in its processing
// list, or written. Each worker keeps a lease key alive; a worker whose lease has expired is dead
// and any other worker may move its processing list back to the head of the queue.
//
// Every script touches the keys of one shard only, which share a hash tag (see Keys), so the
// queue works on Redis Cluster.
type Queue struct {
	rdb   redis.UniversalClient
	keys  Keys
	lease time.Duration
}

// NewQueue returns the queue of keys; lease is how long a worker stays alive without a heartbeat.
func NewQueue(rdb redis.UniversalClient, keys Keys, lease time.Duration) *Queue {
	return &Queue{rdb: rdb, keys: keys, lease: lease}
}

// Keys returns the key layout of the queue.
func (q *Queue) Keys() Keys { return q.keys }

// claimScript moves up to ARGV[1] events from the head of the queue to the tail of the worker's
// processing list, registers the worker and refreshes its lease, atomically. RPUSH goes in chunks
// because unpack() is bounded by Lua's C stack.
//
//	KEYS[1] queue  KEYS[2] processing  KEYS[3] workers  KEYS[4] lease
//	ARGV[1] n  ARGV[2] worker  ARGV[3] lease ms
var claimScript = redis.NewScript(`
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local n = #items
if n == 0 then return items end
redis.call('LTRIM', KEYS[1], n, -1)
for i = 1, n, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(items, i, math.min(i + 999, n)))
end
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
return items
`)

// Claim moves up to n events from the head of shard's queue to worker's processing list and
// returns them, oldest first. An empty result means the queue is empty.
func (q *Queue) Claim(ctx context.Context, shard int, worker string, n int) ([]string, error) {
	keys := []string{q.keys.Queue(shard), q.keys.Processing(shard, worker), q.keys.Workers(shard), q.keys.Lease(shard, worker)}
	items, err := claimScript.Run(ctx, q.rdb, keys, n, worker, q.lease.Milliseconds()).StringSlice()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim from queue shard %d: %w", shard, err)
	}
	return items, nil
}

// Pending returns up to n events at the head of worker's processing list: claimed earlier and
// not acknowledged yet (a write or an acknowledgement failed). A worker finishes these before it
// claims more, so its processing list only ever holds the batch in hand.
func (q *Queue) Pending(ctx context.Context, shard int, worker string, n int) ([]string, error) {
	items, err := q.rdb.LRange(ctx, q.keys.Processing(shard, worker), 0, int64(n)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("read processing list of shard %d: %w", shard, err)
	}
	return items, nil
}

// ackScript trims the acknowledged head off the processing list and, when that empties it,
// unregisters the worker: the workers set only names workers that hold events, so a worker that
// dies between batches leaves nothing behind.
//
//	KEYS[1] processing  KEYS[2] workers
//	ARGV[1] count  ARGV[2] worker
var ackScript = redis.NewScript(`
redis.call('LTRIM', KEYS[1], ARGV[1], -1)
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[2]) end
return 0
`)

// Ack removes the first count events of worker's processing list: they are durably written.
// When the list was reclaimed meanwhile (the worker's lease had expired), there is nothing left
// to remove and Ack does nothing; the reclaimed events are written again, harmlessly, because
// writes are idempotent.
func (q *Queue) Ack(ctx context.Context, shard int, worker string, count int) error {
	if count < 0 {
		count = 0
	}
	keys := []string{q.keys.Processing(shard, worker), q.keys.Workers(shard)}
	if err := ackScript.Run(ctx, q.rdb, keys, count, worker).Err(); err != nil {
		return fmt.Errorf("ack %d events on shard %d: %w", count, shard, err)
	}
	return nil
}

// Heartbeat keeps worker's lease on shard alive for another lease period.
func (q *Queue) Heartbeat(ctx context.Context, shard int, worker string) error {
	if err := q.rdb.Set(ctx, q.keys.Lease(shard, worker), "1", q.lease).Err(); err != nil {
		return fmt.Errorf("heartbeat on shard %d: %w", shard, err)
	}
	return nil
}

// Workers lists the workers registered on shard (those that claimed events and have not been
// reclaimed or released).
func (q *Queue) Workers(ctx context.Context, shard int) ([]string, error) {
	ws, err := q.rdb.SMembers(ctx, q.keys.Workers(shard)).Result()
	if err != nil {
		return nil, fmt.Errorf("list workers of shard %d: %w", shard, err)
	}
	return ws, nil
}

// returnScript moves a worker's processing list back to the head of the queue in its original
// order (LMOVE from the tail to the head), unregisters the worker and drops its lease. Unless
// ARGV[2] is "force", it does nothing while the lease is alive, and returns -1.
//
//	KEYS[1] queue  KEYS[2] processing  KEYS[3] workers  KEYS[4] lease
//	ARGV[1] worker  ARGV[2] "force" or ""
var returnScript = redis.NewScript(`
if ARGV[2] ~= 'force' and redis.call('EXISTS', KEYS[4]) == 1 then return -1 end
local n = 0
while redis.call('LMOVE', KEYS[2], KEYS[1], 'RIGHT', 'LEFT') do n = n + 1 end
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[4])
return n
`)

// ErrLeaseAlive means Reclaim found the worker's lease alive: it is not dead.
var ErrLeaseAlive = errors.New("worker lease is alive")

// Reclaim moves the processing list of a dead worker (its lease expired) back to the head of
// shard's queue and unregisters it. It returns how many events it moved, or ErrLeaseAlive.
func (q *Queue) Reclaim(ctx context.Context, shard int, deadWorker string) (int, error) {
	return q.returnList(ctx, shard, deadWorker, "")
}

// Release is a worker's own goodbye on shard: whatever is still in its processing list goes back
// to the head of the queue at once (nobody waits for the lease to expire), and it unregisters.
func (q *Queue) Release(ctx context.Context, shard int, worker string) (int, error) {
	return q.returnList(ctx, shard, worker, "force")
}

func (q *Queue) returnList(ctx context.Context, shard int, worker, mode string) (int, error) {
	keys := []string{q.keys.Queue(shard), q.keys.Processing(shard, worker), q.keys.Workers(shard), q.keys.Lease(shard, worker)}
	n, err := returnScript.Run(ctx, q.rdb, keys, worker, mode).Int()
	if err != nil {
		return 0, fmt.Errorf("return processing list of %s on shard %d: %w", worker, shard, err)
	}
	if n < 0 {
		return 0, ErrLeaseAlive
	}
	return n, nil
}

// deadLetterScript removes one occurrence of the event from the worker's processing list and, if
// it was there, appends the entry to the dead-letter list, atomically: the event is in exactly
// one of the two. If it was not there (the list was reclaimed meanwhile), the event is back in
// the queue and will be dead-lettered when it comes round again.
//
//	KEYS[1] processing  KEYS[2] dead
//	ARGV[1] raw event  ARGV[2] dead-letter entry
var deadLetterScript = redis.NewScript(`
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
if removed == 1 then redis.call('RPUSH', KEYS[2], ARGV[2]) end
return removed
`)

// DeadEntry is one entry of the dead-letter list.
type DeadEntry struct {
	Raw    string    `json:"raw,omitempty"`
	RawB64 string    `json:"raw_b64,omitempty"` // the event's bytes when they are not valid UTF-8
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Bytes returns the dead event as it was queued.
func (d DeadEntry) Bytes() []byte {
	if d.RawB64 != "" {
		b, _ := base64.StdEncoding.DecodeString(d.RawB64)
		return b
	}
	return []byte(d.Raw)
}

// DeadLetter moves raw, which worker holds in its processing list on shard, to the shard's
// dead-letter list with the reason it cannot be written. It reports whether the event was still
// in the processing list (and so was moved); the caller then acknowledges one event fewer.
func (q *Queue) DeadLetter(ctx context.Context, shard int, worker, raw, reason string, now time.Time) (bool, error) {
	entry := DeadEntry{Reason: reason, At: now.UTC()}
	if utf8.ValidString(raw) {
		entry.Raw = raw
	} else {
		entry.RawB64 = base64.StdEncoding.EncodeToString([]byte(raw))
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return false, fmt.Errorf("encode dead letter: %w", err)
	}
	keys := []string{q.keys.Processing(shard, worker), q.keys.Dead(shard)}
	n, err := deadLetterScript.Run(ctx, q.rdb, keys, raw, b).Int()
	if err != nil {
		return false, fmt.Errorf("dead-letter on shard %d: %w", shard, err)
	}
	return n == 1, nil
}

// DeadLetters returns up to n entries of shard's dead-letter list, oldest first.
func (q *Queue) DeadLetters(ctx context.Context, shard int, n int) ([]DeadEntry, error) {
	raws, err := q.rdb.LRange(ctx, q.keys.Dead(shard), 0, int64(n)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("read dead letters of shard %d: %w", shard, err)
	}
	out := make([]DeadEntry, 0, len(raws))
	for _, r := range raws {
		var d DeadEntry
		if err := json.Unmarshal([]byte(r), &d); err != nil {
			d = DeadEntry{Raw: r, Reason: "unreadable dead-letter entry"}
		}
		out = append(out, d)
	}
	return out, nil
}

// QueueStats is the state of one shard of the queue.
type QueueStats struct {
	Length     int64            // events waiting in the queue
	OldestAt   time.Time        // event time of the head of the queue; zero if empty or unreadable
	Processing map[string]int64 // claimed, unacknowledged events per registered worker
	Dead       int64            // entries in the dead-letter list
}

// ProcessingTotal sums Processing.
func (s QueueStats) ProcessingTotal() int64 {
	var n int64
	for _, v := range s.Processing {
		n += v
	}
	return n
}

// statsScript reads a shard's sizes in one atomic step: the queue's length and head, the
// dead-letter list's length, and each registered worker with its processing list's length. Read
// in several steps, a reclaim (processing list → queue) or a claim (queue → processing list) that
// ran between them could hide its events from both reads, and a busy queue would look drained.
// The processing lists are not in KEYS because their names come from the workers set; they share
// the shard's hash tag (ARGV[1] is their prefix), so on a Cluster they live on the same node.
//
//	KEYS[1] queue  KEYS[2] dead  KEYS[3] workers
//	ARGV[1] processing-list key prefix
//
// It returns {queue length, head or false, dead length, worker1, length1, worker2, length2, …}.
var statsScript = redis.NewScript(`
local out = {redis.call('LLEN', KEYS[1]), redis.call('LINDEX', KEYS[1], 0), redis.call('LLEN', KEYS[2])}
for _, w in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  out[#out + 1] = w
  out[#out + 1] = redis.call('LLEN', ARGV[1] .. w)
end
return out
`)

// Stats reads the sizes of shard's lists in one atomic script (statsScript says why).
func (q *Queue) Stats(ctx context.Context, shard int) (QueueStats, error) {
	keys := []string{q.keys.Queue(shard), q.keys.Dead(shard), q.keys.Workers(shard)}
	res, err := statsScript.Run(ctx, q.rdb, keys, q.keys.Processing(shard, "")).Slice()
	if err != nil {
		return QueueStats{}, fmt.Errorf("queue stats of shard %d: %w", shard, err)
	}
	if len(res) < 3 || len(res)%2 != 1 {
		return QueueStats{}, fmt.Errorf("queue stats of shard %d: unexpected reply of %d values", shard, len(res))
	}
	qlen, _ := res[0].(int64)
	dead, _ := res[2].(int64)
	st := QueueStats{Length: qlen, Dead: dead, Processing: make(map[string]int64, (len(res)-3)/2)}
	if head, ok := res[1].(string); ok {
		st.OldestAt = eventTime(head)
	}
	for i := 3; i+1 < len(res); i += 2 {
		w, _ := res[i].(string)
		n, _ := res[i+1].(int64)
		st.Processing[w] = n
	}
	return st, nil
}

// eventTime reads the "t" (Unix milliseconds) field of a queued event without decoding the rest;
// zero when there is none.
func eventTime(raw string) time.Time {
	var w struct {
		T json.Number `json:"t"`
	}
	if json.Unmarshal([]byte(raw), &w) != nil {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(string(w.T), 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
