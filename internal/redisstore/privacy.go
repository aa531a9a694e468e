package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

// Peek returns uid's state as Redis holds it (the empty state when it holds none), without
// loading it from MySQL or caching anything: an export reads, it never writes a key that names
// the uid.
func (s *UserStore) Peek(ctx context.Context, uid string) (popup.UserState, error) {
	raw, err := s.rdb.Get(ctx, s.keys.User(uid)).Result()
	if errors.Is(err, redis.Nil) {
		return popup.UserState{}, nil
	}
	if err != nil {
		return popup.UserState{}, fmt.Errorf("read user state: %w", err)
	}
	return DecodeState(raw)
}

// Eraser is the Redis side of erasing a user (privacy.Cache): every key that names the uid, and
// its events in the queue. Every key it touches is in the uid's shard (one hash slot).
type Eraser struct {
	rdb  redis.UniversalClient
	keys Keys
}

// NewEraser returns the eraser of keys' layout.
func NewEraser(rdb redis.UniversalClient, keys Keys) *Eraser { return &Eraser{rdb: rdb, keys: keys} }

// EraseState deletes uid's state, action rate counter and reservation (a pending one, whose
// confirmation would otherwise write the state and events planned for uid after the erasure, or
// the confirmed one's marker); it returns how many existed.
func (e *Eraser) EraseState(ctx context.Context, uid string) (int64, error) {
	return e.rdb.Del(ctx, e.keys.User(uid), e.keys.RateLimit(uid), e.keys.Reservation(uid)).Result()
}

// replaceMarkerScript swaps one event-id marker for the erased marker that stands for it, with
// the marker's remaining life (a marker without one gets ARGV[1]).
//
//	KEYS[1] event-id marker  KEYS[2] erased marker  ARGV[1] default TTL ms
var replaceMarkerScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if ttl < 0 then ttl = ARGV[1] end
redis.call('SET', KEYS[2], '1', 'PX', ttl)
redis.call('DEL', KEYS[1])
return 1
`)

// ReplaceMarkers replaces each of uid's event-id markers of the previous release's form (a key
// per marker, Keys.EventID and ConversionID) by the erased marker named hash(event id)
// (Keys.Erased), which popup-api refuses retries against for the rest of the marker's life. It
// returns how many markers it replaced. The markers of this release name no uid (markers.go):
// they stay, and refuse those retries themselves.
func (e *Eraser) ReplaceMarkers(ctx context.Context, uid string, hash func(eventID string) string) (int64, error) {
	prefix := e.keys.EventID(uid, "")
	node, err := e.node(ctx, prefix)
	if err != nil {
		return 0, err
	}
	var n int64
	iter := node.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		id := strings.TrimPrefix(key, prefix)
		keys := []string{key, e.keys.Erased(uid, hash(id))}
		done, err := replaceMarkerScript.Run(ctx, e.rdb, keys, EventIDTTL.Milliseconds()).Int64()
		if err != nil {
			return n, fmt.Errorf("replace event marker: %w", err)
		}
		n += done
	}
	if err := iter.Err(); err != nil {
		return n, fmt.Errorf("scan event markers: %w", err)
	}
	// The markers of the user's conversions likewise, hashed in their own namespace.
	prefix = e.keys.ConversionID(uid, "")
	iter = node.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		keys := []string{key, e.keys.Erased(uid, hash(ConversionMarkerID(strings.TrimPrefix(key, prefix))))}
		done, err := replaceMarkerScript.Run(ctx, e.rdb, keys, EventIDTTL.Milliseconds()).Int64()
		if err != nil {
			return n, fmt.Errorf("replace conversion marker: %w", err)
		}
		n += done
	}
	if err := iter.Err(); err != nil {
		return n, fmt.Errorf("scan conversion markers: %w", err)
	}
	return n, nil
}

// node is the client that holds key: its master on a Redis Cluster (SCAN runs on one node).
func (e *Eraser) node(ctx context.Context, key string) (redis.Cmdable, error) {
	if cc, ok := e.rdb.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return e.rdb, nil
}

// globEscape escapes the characters SCAN's MATCH treats as pattern (a key prefix may hold them).
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// scanChunk is how many list entries one LRANGE of a purge reads.
const scanChunk = 1000

// PurgeQueued removes uid's events from its shard's queue and dead-letter list and returns how
// many it removed. Removing entries from these lists is safe at any moment (a claim moves the
// queue's head in one script; the dead-letter list only grows); the workers' processing lists
// are left alone, since a worker acknowledges its batch by count: their events of the uid are
// dropped at the write (the tombstone).
func (e *Eraser) PurgeQueued(ctx context.Context, uid string) (int64, error) {
	shard := e.keys.Shard(uid)
	var n int64
	for _, list := range []struct {
		key  string
		dead bool
	}{{e.keys.Queue(shard), false}, {e.keys.Dead(shard), true}} {
		found, err := e.eventsOf(ctx, list.key, uid, list.dead)
		if err != nil {
			return n, err
		}
		for _, raw := range found {
			m, err := e.rdb.LRem(ctx, list.key, 0, raw).Result()
			if err != nil {
				return n, fmt.Errorf("remove queued event: %w", err)
			}
			n += m
		}
	}
	return n, nil
}

// Holding reports whether any worker's processing list on uid's shard holds an event of uid.
func (e *Eraser) Holding(ctx context.Context, uid string) (bool, error) {
	shard := e.keys.Shard(uid)
	workers, err := e.rdb.SMembers(ctx, e.keys.Workers(shard)).Result()
	if err != nil {
		return false, fmt.Errorf("list workers: %w", err)
	}
	for _, w := range workers {
		found, err := e.eventsOf(ctx, e.keys.Processing(shard, w), uid, false)
		if err != nil || len(found) > 0 {
			return len(found) > 0, err
		}
	}
	return false, nil
}

// eventsOf returns the entries of list that are events of uid (dead: dead-letter entries whose
// event is). The list is read in chunks; entries that move meanwhile may be missed, which the
// erasure's repeated purge covers.
func (e *Eraser) eventsOf(ctx context.Context, list, uid string, dead bool) ([]string, error) {
	needle := `"u":"` + uid + `"`
	var found []string
	for start := int64(0); ; start += scanChunk {
		items, err := e.rdb.LRange(ctx, list, start, start+scanChunk-1).Result()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", list, err)
		}
		for _, raw := range items {
			if isEventOf(raw, uid, needle, dead) {
				found = append(found, raw)
			}
		}
		if len(items) < scanChunk {
			return found, nil
		}
	}
}

// isEventOf reports whether raw (a queued event, or a dead-letter entry when dead) is an event of
// uid. An undecodable event counts when its text names the uid as the event's user.
func isEventOf(raw, uid, needle string, dead bool) bool {
	ev := []byte(raw)
	if dead {
		var d DeadEntry
		if json.Unmarshal(ev, &d) != nil {
			return strings.Contains(raw, uid)
		}
		ev = d.Bytes()
	}
	if !strings.Contains(string(ev), needle) {
		return false
	}
	if e, err := event.Decode(ev); err == nil {
		return e.UID == uid
	}
	return true
}
