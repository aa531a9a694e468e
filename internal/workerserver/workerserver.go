// Package workerserver wires popup-worker together from its config: the queue drain, the config
// cache warmer, the dependency checks and the /healthz and /metrics listener. cmd/popup-worker
// runs it.
//
// popup-worker starts whatever state MySQL and Redis are in: it waits for both (capped exponential
// backoff with jitter), saying on /healthz what it waits for, and drains as soon as both answer.
// It stops with an error only for a bad config, a schema it cannot use (unmigrated or newer than
// the binary) or batches that MySQL's max_allowed_packet cannot take.
package workerserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"popupsvc/internal/config"
	"popupsvc/internal/drain"
	"popupsvc/internal/health"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
)

// Hooks let a caller observe or instrument the running worker.
type Hooks struct {
	// OnListen is called once the /healthz and /metrics listener is bound.
	OnListen func(net.Addr)
	// Failpoint, when set, is called at the drain's failpoints (crash tests).
	Failpoint func(point string)
}

// Dependency checks: how often while the dependency is up, and how long one check may take.
const (
	depCheckEvery   = 5 * time.Second
	depCheckTimeout = 10 * time.Second
)

// Run serves until ctx ends: the drain of every shard (once MySQL and Redis have both answered),
// the listener and the cache warmer. The first of them to fail stops the others.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, hooks Hooks) error {
	worker := drain.WorkerID()
	log = log.With("worker", worker)
	log.Info("popup-worker starting", "config", cfg.String())

	db, err := mysqlstore.NewPool(cfg.MySQLDSN, cfg.MySQLMaxOpen)
	if err != nil {
		return err
	}
	defer db.Close()
	// The worker is off the hot path, and its scripts move whole batches: it does not need the
	// API's tight Redis timeout.
	rcfg := cfg
	rcfg.RedisTimeout = max(cfg.RedisTimeout, time.Second)
	rdb, err := redisstore.NewClient(rcfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	queue := redisstore.NewQueue(rdb, keys, cfg.WorkerLease)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(drain.NewQueueCollector(queue, cfg.Shards()))
	metrics := drain.NewMetrics(reg)
	depUp := health.NewUpGauge(reg)
	retention := newLogRetention(mysqlstore.NewLogPartitions(db), cfg.ActionLogRetention,
		mysqlstore.NewStatePurger(db), cfg.StateRetention, log, reg)

	writer := mysqlstore.NewEventWriter(db)
	writer.OnRows = metrics.RowsWritten
	eraser, err := newEraser(cfg, db, rdb, keys, worker, log, reg)
	if err != nil {
		return err
	}
	writer.Erased = eraser.Keyed
	writer.OnErased = eraser.dropped
	dcfg := drain.Config{
		Worker: worker, Shards: cfg.Shards(), BatchSize: cfg.WorkerBatchSize, FlushEvery: cfg.WorkerFlushEvery,
		Lease: cfg.WorkerLease, Grace: cfg.ShutdownTimeout, Failpoint: hooks.Failpoint,
	}
	var known *knownUsers
	if cfg.KnownUsers > 0 {
		f, err := redisstore.NewKnownUsers(keys, cfg.KnownUsers, cfg.KnownUsersFP)
		if err != nil {
			return err
		}
		known = newKnownUsers(f, rdb, cfg.Shards(), cfg.KnownUsersRebuildRate, mysqlstore.NewUserStateLoader(db).StateUIDs, log, reg)
		// Checked every 10 s, or as often as the config cache is warmed when that is more often.
		known.every = min(known.every, cfg.WarmInterval)
		dcfg.Written = known.written
		log.Info("known-users filter", "uids", cfg.KnownUsers, "fp", cfg.KnownUsersFP, "bits_per_shard", f.Bits, "k", f.K, "redis_bytes", f.Bytes())
	}
	drainer := drain.New(queue, writer, dcfg, log, metrics)

	warmNow := make(chan struct{}, 1)
	kickWarm := func() {
		select {
		case warmNow <- struct{}{}:
		default:
		}
	}
	mysqlDep := &health.Dep{Name: "mysql", Every: depCheckEvery, Timeout: depCheckTimeout, Backoff: health.DefaultBackoff,
		Log: log, Gauge: depUp, Check: mysqlCheck(db, writer, cfg.WorkerBatchSize), Fatal: isFatal, OnUp: kickWarm}
	// A Redis Cluster's coverage setting decides the blast radius of a dead master: checked at
	// start and whenever Redis comes back (nil, checking nothing, unless Redis is a cluster).
	coverage := redisstore.NewCoverageCheck(rdb, log, reg)
	redisDep := &health.Dep{Name: "redis", Every: depCheckEvery, Timeout: depCheckTimeout, Backoff: health.DefaultBackoff,
		Log: log, Gauge: depUp, Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		OnUp: func() { kickWarm(); coverage.Kick() }}
	deps := []*health.Dep{mysqlDep, redisDep}

	ln, err := net.Listen("tcp", cfg.WorkerAddr)
	if err != nil {
		return fmt.Errorf("worker listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", healthz(deps)) // GET patterns answer HEAD too
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Info("popup-worker listening", "addr", ln.Addr().String(), "shards", cfg.Shards())
	if hooks.OnListen != nil {
		hooks.OnListen(ln.Addr())
	}

	cache := redisstore.NewConfigCache(rdb, keys)
	repo := mysqlstore.NewPopupRepo(db)
	srm := newSRMMonitor(repo.ListWithExperiments,
		mysqlstore.NewStatsRepo(db).ExperimentDays, log, reg)
	g, gctx := errgroup.WithContext(ctx)
	for _, d := range deps {
		g.Go(func() error { return d.Run(gctx) })
	}
	g.Go(func() error { return coverage.Run(gctx) })
	g.Go(func() error {
		if !waitUp(gctx, deps) {
			return nil
		}
		log.Info("popup-worker draining")
		return drainer.Run(gctx)
	})
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("worker listener: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	g.Go(func() error {
		if !waitUp(gctx, deps) {
			return nil
		}
		warmLoop(gctx, cfg.WarmInterval, warmNow, log, func(ctx context.Context) (int64, error) {
			return snapshot.Warm(ctx, repo, cache)
		})
		return nil
	})
	if known != nil {
		g.Go(func() error {
			if waitUp(gctx, deps) {
				known.run(gctx)
			}
			return nil
		})
	}
	if eraser.Keyed != nil {
		g.Go(func() error {
			if !waitUp(gctx, deps) {
				return nil
			}
			return eraser.Run(gctx)
		})
	}
	g.Go(func() error {
		if !waitUp(gctx, deps) {
			return nil
		}
		retention.maintainLoop(gctx, retentionEvery)
		return nil
	})
	g.Go(func() error {
		if waitUp(gctx, deps) {
			retention.backfill(gctx)
		}
		return nil
	})
	g.Go(func() error {
		if waitUp(gctx, deps) {
			retention.statesLoop(gctx, retentionEvery)
		}
		return nil
	})
	g.Go(func() error {
		if waitUp(gctx, deps) {
			srm.run(gctx, srmEvery)
		}
		return nil
	})
	err = g.Wait()
	log.Info("popup-worker stopped")
	return err
}

// configError is a check failure no retry can fix.
type configError struct{ error }

func (e configError) Unwrap() error { return e.error }

func isFatal(err error) bool {
	var ce configError
	return errors.Is(err, mysqlstore.ErrSchema) || errors.As(err, &ce)
}

// mysqlCheck pings MySQL and, the first time it answers, checks the schema and that batches of
// batchSize fit in max_allowed_packet; either mismatch is fatal. Only the check's own goroutine
// calls it.
func mysqlCheck(db *sql.DB, writer *mysqlstore.EventWriter, batchSize int) func(context.Context) error {
	checked := false
	return func(ctx context.Context) error {
		if err := db.PingContext(ctx); err != nil {
			return fmt.Errorf("ping MySQL: %w", err)
		}
		if checked {
			return nil
		}
		if err := mysqlstore.CheckSchema(ctx, db); err != nil {
			return err
		}
		if err := writer.CheckBatchSize(ctx, batchSize); err != nil {
			if mysqlstore.Unavailable(err) {
				return err
			}
			return configError{err}
		}
		checked = true
		return nil
	}
}

// waitUp waits until every dependency has been up once; false when ctx ended first.
func waitUp(ctx context.Context, deps []*health.Dep) bool {
	for _, d := range deps {
		select {
		case <-d.FirstUp():
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// healthz answers 200 as long as the process lives (a worker waiting for a dependency is alive,
// and restarting it would not help), with a body that says what it waits for:
// {"status":"ok"} or {"status":"waiting","waiting_for":["mysql"]}.
func healthz(deps []*health.Dep) http.HandlerFunc {
	type body struct {
		Status     string   `json:"status"`
		WaitingFor []string `json:"waiting_for,omitempty"`
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		b := body{Status: "ok"}
		for _, d := range deps {
			if !d.Up() {
				b.WaitingFor = append(b.WaitingFor, d.Name)
			}
		}
		if len(b.WaitingFor) > 0 {
			b.Status = "waiting"
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(b)
	}
}

// warmLoop (re)warms the Redis config cache from MySQL at once, every interval and whenever a
// dependency comes back, so that a flushed or restarted Redis heals without anyone acting.
func warmLoop(ctx context.Context, interval time.Duration, now <-chan struct{}, log *slog.Logger, warm func(context.Context) (int64, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := int64(-1)
	for {
		wctx, cancel := context.WithTimeout(ctx, max(interval, 10*time.Second))
		v, err := warm(wctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("warm config cache", "err", err)
		case err == nil && v != last:
			log.Info("config cache warm", "version", v)
			last = v
		}
		select {
		case <-ctx.Done():
			return
		case <-now:
		case <-t.C:
		}
	}
}
