// Package apiserver wires popup-api together from its config: stores, snapshot refresher,
// public and admin listeners. cmd/popup-api and the end-to-end tests both run it.
package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"popupsvc/internal/breaker"
	"popupsvc/internal/coalesce"
	"popupsvc/internal/config"
	"popupsvc/internal/configcache"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/uidauth"
)

// Hooks let a caller observe the running server (tests bind to port 0).
type Hooks struct {
	OnListen func(public, admin net.Addr)
	Now      func() time.Time
}

// Breaker settings: consecutive Redis failures that open it, and how long it stays open before a
// probe. Together with POPUP_REDIS_TIMEOUT they bound a degraded answer's latency.
const (
	breakerThreshold = 5
	breakerCooldown  = time.Second
)

// Run serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, hooks Hooks) error {
	if cfg.AdminToken == "" {
		return httpapi.ErrNoToken
	}
	now := hooks.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	db, err := mysqlstore.OpenChecked(ctx, cfg.MySQLDSN, cfg.MySQLMaxOpen)
	if err != nil {
		return err
	}
	defer db.Close()
	rdb, err := redisstore.NewClient(cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.QueueShards}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := httpapi.NewMetrics(reg)

	holder := &snapshot.Holder{}
	subscribed := make(chan struct{})
	refresher := &configcache.Refresher{RDB: rdb, DB: db, Keys: keys, Holder: holder, Poll: cfg.ConfigPoll, Log: log, Now: now,
		Subscribed: subscribed,
		OnSwap: func(s *snapshot.Snapshot) {
			metrics.Version.Set(float64(s.Version))
			metrics.BuiltAt.Set(float64(s.BuiltAt.UnixNano()) / 1e9)
			log.Info("config snapshot swapped", "version", s.Version, "active", len(s.Ordered))
		}}
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = refresher.Refresh(startCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("load initial config snapshot: %w", err)
	}

	var pipe *redis.AutoPipeliner
	if cfg.RedisPipelining {
		if pipe, err = rdb.AsyncAutoPipeline(); err != nil {
			return fmt.Errorf("redis autopipeline: %w", err)
		}
		// It carries the Redis calls of the requests in flight: it closes (flushing what it
		// holds) only after both listeners have shut down, when Run returns.
		defer pipe.Close() //nolint:errcheck // nothing left to answer
	}
	users := redisstore.NewUserStore(rdb, keys, cfg.UserStateTTL, mysqlstore.NewUserStateLoader(db), cfg.StateLoadLimit, pipe)
	users.SetActionRateLimit(cfg.ActionRateLimit)
	public := &httpapi.Public{
		Snapshots: holder, Users: users, Breaker: breaker.New(breakerThreshold, breakerCooldown),
		DailyCap: cfg.UserDailyCap, Budget: cfg.RequestBudget, Now: now, Log: log, Metrics: metrics,
		Ready: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	}
	if len(cfg.UIDHMACKeys) > 0 {
		if public.UIDAuth, err = uidauth.New(cfg.UIDHMACKeys, cfg.UIDHMACMaxAge); err != nil {
			return fmt.Errorf("POPUP_UID_HMAC_KEYS: %w", err)
		}
		log.Info("uid signatures required", "header", uidauth.Header, "keys", len(cfg.UIDHMACKeys), "max_age", cfg.UIDHMACMaxAge)
	}
	// A reload republishes every config, so concurrent admin writes share one (each still returns
	// only after a reload that began after its commit): a bulk import costs O(n), not O(n²).
	reloads := &coalesce.Group[int64]{Fn: func(ctx context.Context) (int64, error) {
		if _, err := configcache.Warm(ctx, db, rdb, keys); err != nil {
			return 0, err
		}
		if err := refresher.Refresh(ctx); err != nil {
			return 0, err
		}
		return holder.Load().Version, nil
	}}
	admin := &httpapi.Admin{Token: cfg.AdminToken, Repo: mysqlstore.NewPopupRepo(db), Users: users, Snapshots: holder,
		DailyCap: cfg.UserDailyCap, Now: now, Log: log, Gatherer: reg, Reload: reloads.Do}
	adminRouter, err := admin.Router()
	if err != nil {
		return err
	}

	publicSrv := httpapi.NewServer(cfg.HTTPAddr, public.Router())
	adminSrv := httpapi.NewServer(cfg.AdminAddr, adminRouter)
	adminSrv.WriteTimeout = 2 * time.Minute // pprof profiles and traces run for a while

	var publicAddr, adminAddr net.Addr
	bound := make(chan struct{}, 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return httpapi.Serve(gctx, publicSrv, cfg.ShutdownTimeout, func(a net.Addr) { publicAddr = a; bound <- struct{}{} })
	})
	g.Go(func() error {
		return httpapi.Serve(gctx, adminSrv, cfg.ShutdownTimeout, func(a net.Addr) { adminAddr = a; bound <- struct{}{} })
	})
	g.Go(func() error { return refresher.Run(gctx) })
	g.Go(func() error {
		for _, ch := range []chan struct{}{bound, bound, subscribed} {
			select {
			case <-ch:
			case <-gctx.Done():
				return nil
			}
		}
		log.Info("popup-api serving", "public", publicAddr.String(), "admin", adminAddr.String(), "config_version", holder.Load().Version)
		if hooks.OnListen != nil {
			hooks.OnListen(publicAddr, adminAddr)
		}
		return nil
	})
	return g.Wait()
}
