package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/config"
)

// ClientOptions are what a Redis client is built from: where Redis is, how it is deployed and
// how the client is tuned. OptionsOf reads them from the config; a caller that needs a
// differently tuned client (a longer timeout, a smaller pool) edits its copy.
type ClientOptions struct {
	// Addrs are the nodes (host:port) or one redis:// URL; several mean a cluster.
	Addrs      []string
	Password   string
	MasterName string // Sentinel's master: the failover client
	Cluster    bool   // POPUP_REDIS_CLUSTER: a cluster even with one seed
	// ClusterReload is how often a cluster client re-reads the slot map.
	ClusterReload time.Duration
	Timeout       time.Duration
	PoolSize      int
}

// OptionsOf are the client options of cfg (POPUP_REDIS_*).
func OptionsOf(cfg config.Config) ClientOptions {
	return ClientOptions{Addrs: cfg.RedisAddrs(), Password: cfg.RedisPassword, MasterName: cfg.RedisMasterName,
		Cluster: cfg.RedisCluster, ClusterReload: cfg.RedisClusterReload, Timeout: cfg.RedisTimeout, PoolSize: cfg.RedisPoolSize}
}

// NewClient builds the Redis client of o: a single node (host:port or redis:// URL), a cluster
// (several seeds, or POPUP_REDIS_CLUSTER) or sentinels (POPUP_REDIS_MASTER_NAME). Timeouts are
// tight because the homepage prefers no popup to a slow answer; the context deadline of each call
// is honoured too.
func NewClient(o ClientOptions) (redis.UniversalClient, error) {
	opts := &redis.UniversalOptions{
		Addrs:                 o.Addrs,
		Password:              o.Password,
		MasterName:            o.MasterName,
		DialTimeout:           max(o.Timeout, 100*time.Millisecond),
		ReadTimeout:           o.Timeout,
		WriteTimeout:          o.Timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              o.PoolSize,
		MinIdleConns:          min(o.PoolSize, 8),
		PoolTimeout:           o.Timeout * 2,
		MaxRetries:            1,
		IsClusterMode:         o.Cluster,
	}
	// A cluster: several seeds or POPUP_REDIS_CLUSTER, unless sentinels name a master
	// (config.Config.IsCluster).
	cluster := o.MasterName == "" && (o.Cluster || len(o.Addrs) > 1)
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
	if !cluster {
		// A single node, or Sentinel: the failover client follows +switch-master from the
		// sentinels, and asks them again whenever its master cannot be reached.
		return redis.NewUniversalClient(opts), nil
	}
	copts := opts.Cluster()
	copts.ClusterStateReloadInterval = o.ClusterReload
	// The hook goes on every node's client, where the dials and the node pipelines (the
	// autopipeliner's too) happen, and on the cluster client for single commands.
	hook := &reloadOnNetError{}
	copts.NewClient = func(o *redis.Options) *redis.Client {
		c := redis.NewClient(o)
		c.AddHook(hook)
		return c
	}
	cc := redis.NewClusterClient(copts)
	hook.cc = cc
	cc.AddHook(hook)
	return cc, nil
}

// reloadOnNetError makes a cluster client re-read the slot map as soon as a node cannot be
// reached. go-redis re-reads it on MOVED, ASK and READONLY answers and every
// ClusterStateReloadInterval, but a master that died answers nothing: without this, clients
// would keep dialling it until the interval ran out, although a replica took its slots over
// within seconds. ReloadState is asynchronous and coalesced (at most one reload in flight, then a
// 200 ms pause), so a burst of failures costs one CLUSTER SLOTS round trip per node pause.
type reloadOnNetError struct{ cc *redis.ClusterClient }

func (h *reloadOnNetError) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.cc.ReloadState(ctx)
		}
		return conn, err
	}
}

func (h *reloadOnNetError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if unreachable(err) {
			h.cc.ReloadState(ctx)
		}
		return err
	}
}

func (h *reloadOnNetError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if unreachable(err) {
			h.cc.ReloadState(ctx)
		}
		return err
	}
}

// unreachable says whether err means a node could not be reached, dropped the connection or did
// not answer in time, as opposed to an answer (redis.Nil, a script error) or a caller that gave
// up. A deadline counts (context.DeadlineExceeded is a net.Error that timed out): a host that
// vanished without refusing connections looks like that, and a needless reload costs one
// coalesced CLUSTER SLOTS.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, redis.ErrClosed)
}
