package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/jsonx"
	"popupsvc/internal/popup"
	"popupsvc/internal/popupdoc"
)

// publishScript writes blob, version, pacing and holdout ("" deletes either: none) unless Redis
// already holds a newer version, so that two racing warmers cannot put an older config back. The
// keys share the {cfg} hash tag.
var publishScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local v = tonumber(ARGV[2])
if v < cur then return cur end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
for k = 3, 4 do
  if KEYS[k] then
    if ARGV[k] == '' then redis.call('DEL', KEYS[k]) else redis.call('SET', KEYS[k], ARGV[k]) end
  end
end
return v
`)

// pacingDoc is the pacing key's JSON.
type pacingDoc struct {
	MinGapSeconds int64 `json:"min_gap_seconds"`
	DailyCap      int   `json:"daily_cap"`
}

// holdoutDoc is the holdout key's JSON: the running phase.
type holdoutDoc struct {
	Percent   int       `json:"percent"`
	Salt      string    `json:"salt"`
	Phase     int       `json:"phase"`
	StartedAt time.Time `json:"started_at"`
}

// ConfigCache is the shared Redis copy of the popup configs: a blob and its version, and the
// channel that announces a new version to every API instance.
type ConfigCache struct {
	rdb  redis.UniversalClient
	keys Keys
}

// NewConfigCache returns the config cache under keys.
func NewConfigCache(rdb redis.UniversalClient, keys Keys) *ConfigCache {
	return &ConfigCache{rdb: rdb, keys: keys}
}

// Publish writes (version, popups, team) to the cache, unless it holds a newer version, and
// announces the version it holds afterwards, which it returns. A nil pacing (the team set none)
// and no running holdout leave their keys absent.
func (c *ConfigCache) Publish(ctx context.Context, version int64, popups []popup.Popup, team popup.Team) (int64, error) {
	blob, err := encodeConfig(popups)
	if err != nil {
		return 0, fmt.Errorf("encode config cache: %w", err)
	}
	var pdoc, hdoc []byte
	if pacing := team.Pacing; pacing != nil {
		if pdoc, err = json.Marshal(pacingDoc{MinGapSeconds: int64(pacing.MinGap / time.Second), DailyCap: pacing.DailyCap}); err != nil {
			return 0, fmt.Errorf("encode config cache pacing: %w", err)
		}
	}
	if h := team.Holdout; h.Running() {
		if hdoc, err = json.Marshal(holdoutDoc{Percent: h.Percent, Salt: h.Salt, Phase: h.Phase, StartedAt: h.StartedAt}); err != nil {
			return 0, fmt.Errorf("encode config cache holdout: %w", err)
		}
	}
	held, err := publishScript.Run(ctx, c.rdb, []string{c.keys.ConfigBlob(), c.keys.ConfigVersion(), c.keys.ConfigPacing(), c.keys.ConfigHoldout()},
		blob, version, pdoc, hdoc).Int64()
	if err != nil {
		return 0, fmt.Errorf("write config cache: %w", err)
	}
	if err := c.rdb.Publish(ctx, c.keys.ConfigChannel(), held).Err(); err != nil {
		return held, fmt.Errorf("announce config version: %w", err)
	}
	return held, nil
}

// Version reads the cached version; found is false when the cache is empty (a fresh or flushed
// Redis).
func (c *ConfigCache) Version(ctx context.Context) (v int64, found bool, err error) {
	v, err = c.rdb.Get(ctx, c.keys.ConfigVersion()).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read config cache version: %w", err)
	}
	return v, true, nil
}

// Load reads the cached version, popups and team settings (a pacing of nil: none set, or a blob
// an older build wrote; no holdout likewise) in one round trip; found is false when the cache is
// empty.
func (c *ConfigCache) Load(ctx context.Context) (version int64, popups []popup.Popup, team popup.Team, found bool, err error) {
	vals, err := c.rdb.MGet(ctx, c.keys.ConfigVersion(), c.keys.ConfigBlob(), c.keys.ConfigPacing(), c.keys.ConfigHoldout()).Result()
	if err != nil {
		return 0, nil, team, false, fmt.Errorf("read config cache: %w", err)
	}
	vs, ok1 := vals[0].(string)
	blob, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return 0, nil, team, false, nil
	}
	version, err = strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, nil, team, false, fmt.Errorf("config cache version %q: %w", vs, err)
	}
	if popups, err = decodeConfig([]byte(blob)); err != nil {
		return 0, nil, team, false, fmt.Errorf("decode config cache: %w", err)
	}
	if pdoc, ok := vals[2].(string); ok {
		var d pacingDoc
		if err := json.Unmarshal([]byte(pdoc), &d); err != nil {
			return 0, nil, team, false, fmt.Errorf("decode config cache pacing: %w", err)
		}
		team.Pacing = &popup.Pacing{MinGap: time.Duration(d.MinGapSeconds) * time.Second, DailyCap: d.DailyCap}
	}
	if hdoc, ok := vals[3].(string); ok {
		var d holdoutDoc
		if err := json.Unmarshal([]byte(hdoc), &d); err != nil {
			return 0, nil, team, false, fmt.Errorf("decode config cache holdout: %w", err)
		}
		team.Holdout = popup.Holdout{Percent: d.Percent, Salt: d.Salt, Phase: d.Phase, StartedAt: d.StartedAt.UTC()}
	}
	return version, popups, team, true, nil
}

// Subscribe listens to the announcements until ctx ends: the returned channel receives (without
// blocking the listener; one pending signal at most) on every announcement. err says the
// subscription was not confirmed within wait (Redis unreachable): the channel still works, as
// go-redis resubscribes once Redis is back, and the caller should poll meanwhile.
func (c *ConfigCache) Subscribe(ctx context.Context, wait time.Duration) (<-chan struct{}, error) {
	sub := c.rdb.Subscribe(ctx, c.keys.ConfigChannel())
	sctx, cancel := context.WithTimeout(ctx, wait)
	_, err := sub.Receive(sctx)
	cancel()
	if err != nil {
		err = fmt.Errorf("subscribe to config announcements: %w", err)
	}
	msgs := sub.Channel(redis.WithChannelHealthCheckInterval(10 * time.Second))
	out := make(chan struct{}, 1)
	go func() { // owned by ctx: it closes the subscription when ctx ends
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, err
}

// encodeConfig is the blob of popups: a JSON array of popupdoc entries (their keys are a contract
// between instances: popupdoc says why and pins them). It stays on encoding/json: it runs once
// per config change, off the request path.
func encodeConfig(popups []popup.Popup) ([]byte, error) {
	out := make([]popupdoc.Entry, len(popups))
	for i := range popups {
		out[i] = popupdoc.EntryOf(&popups[i])
	}
	return json.Marshal(out)
}

// decodeConfig reads a blob written by encodeConfig (by this or an older build). jsonx: every
// instance decodes the whole config on each announcement, and json-iterator measured faster for
// this blob while accepting exactly what encoding/json accepts.
func decodeConfig(blob []byte) ([]popup.Popup, error) {
	var in []popupdoc.Entry
	if err := jsonx.Unmarshal(blob, &in); err != nil {
		return nil, err
	}
	if in == nil { // the blob "null"
		return nil, nil
	}
	out := make([]popup.Popup, len(in))
	for i := range in {
		out[i] = in[i].Popup()
	}
	return out, nil
}
