package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

// conversionScript atomically refuses a replayed conversion (its uid and event id remembered,
// markers.go, or the previous release's marker of it, or the erased marker that replaced that
// when the user was erased), counts it against the uid's action rate limit, queues it on the
// uid's shard and remembers its event id: the record script's guarantees without a state to
// compare, since a conversion changes none.
//
//	KEYS[1] queue  KEYS[2] the previous release's conversion marker  KEYS[3] its erased marker
//	(KEYS[2] again without POPUP_PRIVACY_KEY)  KEYS[4..6] the marker hashes of the generations
//	before, of and after the caller's  KEYS[7] rate counter (optional)
//	ARGV[1] marker field  ARGV[2] the marker generation's expiry (unix ms)  ARGV[3] actions
//	allowed per rate window  ARGV[4] rate window ms  ARGV[5] the event
var conversionScript = redis.NewScript(`
local seen = redis.call('EXISTS', KEYS[2], KEYS[3]) > 0
if not seen then
  for i = 4, 6 do
    if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then seen = true break end
  end
end
if seen then
  redis.call('HSET', KEYS[5], ARGV[1], '1')
  redis.call('PEXPIREAT', KEYS[5], ARGV[2])
  return 2
end
if KEYS[7] then
  local n = redis.call('INCR', KEYS[7])
  if n == 1 then redis.call('PEXPIRE', KEYS[7], ARGV[4]) end
  if n > tonumber(ARGV[3]) then return 3 end
end
redis.call('RPUSH', KEYS[1], ARGV[5])
redis.call('HSET', KEYS[5], ARGV[1], '1')
redis.call('PEXPIREAT', KEYS[5], ARGV[2])
return 0
`)

// RecordConversion queues conversion ev (event.Conversion) of ev.UID, refusing an event id the uid
// sent before (Duplicate) and a uid over the action rate limit (RateLimited). With
// SetAckReplicas it returns only once that many replicas hold it, as Record does.
func (s *UserStore) RecordConversion(ctx context.Context, ev *event.Event) (Outcome, error) {
	if ev.Action != event.Conversion {
		return 0, fmt.Errorf("record conversion: a %s event", ev.Action)
	}
	shard := s.keys.Shard(ev.UID)
	marker := s.keys.ConversionID(ev.UID, ev.ID)
	erased := marker
	if s.erased != nil {
		erased = s.keys.Erased(ev.UID, s.erased.Event(ev.UID, ConversionMarkerID(ev.ID)))
	}
	m := s.markers.ref(markerConversion, ev.UID, ev.ID, s.now())
	keys := []string{s.keys.Queue(shard), marker, erased, m.gens[0], m.gens[1], m.gens[2]}
	if s.actionLimit > 0 {
		keys = append(keys, s.keys.RateLimit(ev.UID))
	}
	var eb [256]byte
	n, err := s.runRecord(ctx, conversionScript, evalArgs(conversionScript, keys,
		m.field, m.expireAt, s.actionLimitArg, rateWindowArg, event.Append(eb[:0], ev)))
	if err != nil {
		return 0, fmt.Errorf("record conversion: %w", err)
	}
	return Outcome(n), nil
}

// ConversionMarkerID is what a conversion's event id is hashed as for its erased marker: '/' is
// not in the event-id alphabet, so it never names an action's.
func ConversionMarkerID(eventID string) string { return "o/" + eventID }

// GoalCatalog keeps, in Redis, the keys of the goals conversions may name, for every popup-api
// instance's ingest (docs/CONTRACT.md §14): the admin API publishes them after each goal write.
type GoalCatalog struct {
	rdb  redis.UniversalClient
	keys Keys
}

// NewGoalCatalog returns the catalog under keys.
func NewGoalCatalog(rdb redis.UniversalClient, keys Keys) *GoalCatalog {
	return &GoalCatalog{rdb: rdb, keys: keys}
}

// Publish stores the goals' keys.
func (c *GoalCatalog) Publish(ctx context.Context, goals []popup.Goal) error {
	keys := make([]string, len(goals))
	for i, g := range goals {
		keys[i] = g.Key
	}
	b, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	if err := c.rdb.Set(ctx, c.keys.Goals(), b, 0).Err(); err != nil {
		return fmt.Errorf("publish goals: %w", err)
	}
	return nil
}

// Load reads the goals' keys; found is false when none were published (a fresh or flushed Redis).
func (c *GoalCatalog) Load(ctx context.Context) (keys []string, found bool, err error) {
	b, err := c.rdb.Get(ctx, c.keys.Goals()).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read goals: %w", err)
	}
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, false, fmt.Errorf("decode goals: %w", err)
	}
	return keys, true, nil
}
