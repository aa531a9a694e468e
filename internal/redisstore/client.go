package redisstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/config"
)

// NewClient builds the Redis client of cfg: a single node (host:port or redis:// URL), a cluster
// (several seeds, or POPUP_REDIS_CLUSTER) or sentinels (POPUP_REDIS_MASTER_NAME). Timeouts are
// tight because the homepage prefers no popup to a slow answer; the context deadline of each call
// is honoured too.
func NewClient(cfg config.Config) (redis.UniversalClient, error) {
	opts := &redis.UniversalOptions{
		Addrs:                 cfg.RedisAddrs(),
		Password:              cfg.RedisPassword,
		MasterName:            cfg.RedisMasterName,
		DialTimeout:           max(cfg.RedisTimeout, 100*time.Millisecond),
		ReadTimeout:           cfg.RedisTimeout,
		WriteTimeout:          cfg.RedisTimeout,
		ContextTimeoutEnabled: true,
		PoolSize:              cfg.RedisPoolSize,
		MinIdleConns:          min(cfg.RedisPoolSize, 8),
		PoolTimeout:           cfg.RedisTimeout * 2,
		MaxRetries:            1,
		IsClusterMode:         cfg.RedisCluster,
	}
	if len(opts.Addrs) == 1 && strings.Contains(opts.Addrs[0], "://") {
		u, err := redis.ParseURL(opts.Addrs[0])
		if err != nil {
			return nil, fmt.Errorf("POPUP_REDIS_ADDR: %w", err)
		}
		opts.Addrs = []string{u.Addr}
		opts.DB = u.DB
		opts.Username = u.Username
		if u.Password != "" {
			opts.Password = u.Password
		}
		opts.TLSConfig = u.TLSConfig
	}
	return redis.NewUniversalClient(opts), nil
}
