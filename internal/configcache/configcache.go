// Package configcache moves popup configs from MySQL (the source) into the Redis cache and from
// the cache into each API instance's snapshot, announcing changes over pub/sub.
package configcache

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/jsonx"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
)

// publishScript writes blob and version unless Redis already holds a newer version, so that two
// racing warmers cannot put an older config back. Both keys share the {cfg} hash tag.
var publishScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local v = tonumber(ARGV[2])
if v < cur then return cur end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return v
`)

// ErrEmpty means Redis holds no config cache (a fresh or flushed Redis).
var ErrEmpty = errors.New("config cache is empty")

// Warm copies the configs from MySQL into Redis (unless Redis holds a newer version) and
// announces the version. It returns the version Redis holds afterwards.
func Warm(ctx context.Context, db *sql.DB, rdb redis.UniversalClient, keys redisstore.Keys) (int64, error) {
	version, popups, err := mysqlstore.NewPopupRepo(db).Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return Publish(ctx, rdb, keys, version, popups)
}

// Publish writes (version, popups) to the cache and announces it.
func Publish(ctx context.Context, rdb redis.UniversalClient, keys redisstore.Keys, version int64, popups []popup.Popup) (int64, error) {
	blob, err := json.Marshal(popups)
	if err != nil {
		return 0, fmt.Errorf("encode config cache: %w", err)
	}
	held, err := publishScript.Run(ctx, rdb, []string{keys.ConfigBlob(), keys.ConfigVersion()}, blob, version).Int64()
	if err != nil {
		return 0, fmt.Errorf("write config cache: %w", err)
	}
	if err := rdb.Publish(ctx, keys.ConfigChannel(), held).Err(); err != nil {
		return held, fmt.Errorf("announce config version: %w", err)
	}
	return held, nil
}

// Version reads the cached version; ErrEmpty when there is none.
func Version(ctx context.Context, rdb redis.UniversalClient, keys redisstore.Keys) (int64, error) {
	v, err := rdb.Get(ctx, keys.ConfigVersion()).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, ErrEmpty
	}
	return v, err
}

// Load reads the cached version and popups in one round trip.
func Load(ctx context.Context, rdb redis.UniversalClient, keys redisstore.Keys) (int64, []popup.Popup, error) {
	vals, err := rdb.MGet(ctx, keys.ConfigVersion(), keys.ConfigBlob()).Result()
	if err != nil {
		return 0, nil, fmt.Errorf("read config cache: %w", err)
	}
	vs, ok1 := vals[0].(string)
	blob, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return 0, nil, ErrEmpty
	}
	version, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("config cache version %q: %w", vs, err)
	}
	var popups []popup.Popup
	if err := jsonx.Unmarshal([]byte(blob), &popups); err != nil {
		return 0, nil, fmt.Errorf("decode config cache: %w", err)
	}
	return version, popups, nil
}

// Refresher keeps a snapshot.Holder current: a pub/sub message or a version poll triggers a
// reload; an empty Redis is warmed from MySQL; on any failure the last snapshot keeps serving.
type Refresher struct {
	RDB    redis.UniversalClient
	DB     *sql.DB
	Keys   redisstore.Keys
	Holder *snapshot.Holder
	Poll   time.Duration
	Log    *slog.Logger
	Now    func() time.Time
	// OnSwap, when set, is told of every published snapshot (metrics).
	OnSwap func(*snapshot.Snapshot)
	// Subscribed, when set, is closed once the subscription is confirmed (or failed), so that an
	// instance reports itself serving only when it will hear about the next change.
	Subscribed chan struct{}
}

// Refresh brings the holder up to the newest config: from Redis, warming Redis from MySQL when it
// is empty, and straight from MySQL when Redis is unreachable and there is no snapshot yet.
func (r *Refresher) Refresh(ctx context.Context) error {
	cur := r.Holder.Load()
	if cur != nil {
		v, err := Version(ctx, r.RDB, r.Keys)
		if err == nil && v <= cur.Version {
			return nil
		}
		if err != nil && !errors.Is(err, ErrEmpty) {
			return err
		}
	}
	version, popups, err := Load(ctx, r.RDB, r.Keys)
	if errors.Is(err, ErrEmpty) {
		if _, werr := Warm(ctx, r.DB, r.RDB, r.Keys); werr != nil {
			return fmt.Errorf("warm empty config cache: %w", werr)
		}
		version, popups, err = Load(ctx, r.RDB, r.Keys)
	}
	if err != nil {
		if cur != nil {
			return err
		}
		// No snapshot at all yet and Redis cannot give one: serve MySQL's.
		var merr error
		version, popups, merr = mysqlstore.NewPopupRepo(r.DB).Snapshot(ctx)
		if merr != nil {
			return errors.Join(err, merr)
		}
	}
	s := snapshot.Build(version, popups, r.Now())
	for _, p := range s.Problems {
		r.Log.Warn("popup left out of snapshot", "err", p)
	}
	if r.Holder.Store(s) && r.OnSwap != nil {
		r.OnSwap(s)
	}
	return nil
}

// Run refreshes on every announcement and every Poll until ctx ends.
func (r *Refresher) Run(ctx context.Context) error {
	sub := r.RDB.Subscribe(ctx, r.Keys.ConfigChannel())
	defer sub.Close()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if _, err := sub.Receive(sctx); err != nil {
		// Redis unreachable now: go-redis resubscribes when it returns; the poll covers the gap.
		r.Log.Warn("config subscription not confirmed; relying on the poll until it is", "err", err)
	}
	cancel()
	if r.Subscribed != nil {
		close(r.Subscribed)
	}
	msgs := sub.Channel(redis.WithChannelHealthCheckInterval(10 * time.Second))
	tick := time.NewTicker(r.Poll)
	defer tick.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-msgs:
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.Refresh(rctx)
		cancel()
		// Log a failure once, not every poll, and say when it heals.
		switch {
		case err != nil && err.Error() != lastErr:
			r.Log.Warn("config refresh failed; serving the last snapshot", "err", err)
			lastErr = err.Error()
		case err == nil && lastErr != "":
			r.Log.Info("config refresh recovered")
			lastErr = ""
		}
	}
}
