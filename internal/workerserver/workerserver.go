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
	"github.com/redis/go-redis/v9"
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
// the listener and the cache warmer. The first of them to fail stops the others. Each step wires
// a part of the worker from the parts before it.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, hooks Hooks) error {
	id := drain.WorkerID()
	log = log.With("worker", id)
	log.Info("popup-worker starting", "config", cfg.String())
	s := &server{cfg: cfg, log: log, hooks: hooks, id: id, reg: prometheus.NewRegistry()}
	defer s.close()
	for _, step := range []func() error{s.stores, s.writer, s.drainer, s.checks, s.listen} {
		if err := step(); err != nil {
			return err
		}
	}
	return s.serve(ctx)
}

// server is popup-worker as Run wires it, step by step; closers run in reverse when Run returns.
type server struct {
	cfg     config.Config
	log     *slog.Logger
	hooks   Hooks
	id      string // the worker's id (drain.WorkerID)
	reg     *prometheus.Registry
	closers []func() error

	db                 *sql.DB
	rdb                redis.UniversalClient
	keys               redisstore.Keys
	queue              *redisstore.Queue
	metrics            *drain.Metrics
	events             *mysqlstore.EventWriter
	eraser             *eraser
	retention          *logRetention
	known              *knownUsers
	drain              *drain.Drain
	warmNow            chan struct{}
	mysqlDep, redisDep *health.Dep
	coverage           *redisstore.CoverageCheck
	ln                 net.Listener
	srv                *http.Server
}

func (s *server) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]() // closing: nothing left to answer
	}
}

// stores: the MySQL pool, the Redis client and the queue.
func (s *server) stores() error {
	cfg := s.cfg
	db, err := mysqlstore.NewPool(cfg.MySQLDSN, cfg.MySQLMaxOpen)
	if err != nil {
		return err
	}
	s.db = db
	s.closers = append(s.closers, db.Close)
	// The worker is off the hot path, and its scripts move whole batches: it does not need the
	// API's tight Redis timeout.
	ropts := redisstore.OptionsOf(cfg)
	ropts.Timeout = max(cfg.RedisTimeout, time.Second)
	if s.rdb, err = redisstore.NewClient(ropts); err != nil {
		return err
	}
	s.closers = append(s.closers, s.rdb.Close)
	s.keys = redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	s.queue = redisstore.NewQueue(s.rdb, s.keys, cfg.WorkerLease)
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.reg.MustRegister(drain.NewQueueCollector(s.queue, cfg.Shards()))
	s.metrics = drain.NewMetrics(s.reg)
	return nil
}

// writer: the event writer, the erasures it honours and the action log's retention.
func (s *server) writer() error {
	cfg, db := s.cfg, s.db
	s.retention = newLogRetention(mysqlstore.NewLogPartitions(db), cfg.ActionLogRetention,
		mysqlstore.NewStatePurger(db), cfg.StateRetention, s.log, s.reg)
	s.events = mysqlstore.NewEventWriter(db)
	s.events.OnRows = s.metrics.RowsWritten
	var err error
	if s.eraser, err = newEraser(cfg, db, s.rdb, s.keys, s.id, s.log, s.reg); err != nil {
		return err
	}
	s.events.Erased = s.eraser.Keyed
	s.events.OnErased = s.eraser.dropped
	return nil
}

// drainer: the queue drain, and the known-users filter it feeds.
func (s *server) drainer() error {
	cfg := s.cfg
	dcfg := drain.Config{
		Worker: s.id, Shards: cfg.Shards(), BatchSize: cfg.WorkerBatchSize, FlushEvery: cfg.WorkerFlushEvery,
		Lease: cfg.WorkerLease, Grace: cfg.ShutdownTimeout, Failpoint: s.hooks.Failpoint,
	}
	if cfg.KnownUsers > 0 {
		f, err := redisstore.NewKnownUsers(s.keys, cfg.KnownUsers, cfg.KnownUsersFP)
		if err != nil {
			return err
		}
		s.known = newKnownUsers(f, s.rdb, cfg.Shards(), cfg.KnownUsersRebuildRate, mysqlstore.NewUserStateLoader(s.db).StateUIDs, s.log, s.reg)
		// Checked every 10 s, or as often as the config cache is warmed when that is more often.
		s.known.every = min(s.known.every, cfg.WarmInterval)
		dcfg.Written = s.known.written
		s.log.Info("known-users filter", "uids", cfg.KnownUsers, "fp", cfg.KnownUsersFP, "bits_per_shard", f.Bits, "k", f.K, "redis_bytes", f.Bytes())
	}
	s.drain = drain.New(s.queue, s.events, dcfg, s.log, s.metrics)
	return nil
}

// checks: the dependency checks; a dependency coming back warms the config cache at once.
func (s *server) checks() error {
	s.warmNow = make(chan struct{}, 1)
	kickWarm := func() {
		select {
		case s.warmNow <- struct{}{}:
		default:
		}
	}
	depUp := health.NewUpGauge(s.reg)
	s.mysqlDep = &health.Dep{Name: "mysql", Every: depCheckEvery, Timeout: depCheckTimeout, Backoff: health.DefaultBackoff,
		Log: s.log, Gauge: depUp, Check: mysqlCheck(s.db, s.events, s.cfg.WorkerBatchSize), Fatal: isFatal, OnUp: kickWarm}
	// A Redis Cluster's coverage setting decides the blast radius of a dead master: checked at
	// start and whenever Redis comes back (nil, checking nothing, unless Redis is a cluster).
	s.coverage = redisstore.NewCoverageCheck(s.rdb, s.log, s.reg)
	s.redisDep = &health.Dep{Name: "redis", Every: depCheckEvery, Timeout: depCheckTimeout, Backoff: health.DefaultBackoff,
		Log: s.log, Gauge: depUp, Check: func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() },
		OnUp: func() { kickWarm(); s.coverage.Kick() }}
	return nil
}

// listen: the /healthz and /metrics listener.
func (s *server) listen() error {
	ln, err := net.Listen("tcp", s.cfg.WorkerAddr)
	if err != nil {
		return fmt.Errorf("worker listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	mux.HandleFunc("GET /healthz", healthz([]*health.Dep{s.mysqlDep, s.redisDep})) // GET patterns answer HEAD too
	s.ln, s.srv = ln, &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.log.Info("popup-worker listening", "addr", ln.Addr().String(), "shards", s.cfg.Shards())
	if s.hooks.OnListen != nil {
		s.hooks.OnListen(ln.Addr())
	}
	return nil
}

// serve runs the checks and the listener at once, and every loop that needs MySQL and Redis
// once both have answered, until ctx ends.
func (s *server) serve(ctx context.Context) error {
	cfg, log := s.cfg, s.log
	deps := []*health.Dep{s.mysqlDep, s.redisDep}
	cache, repo := redisstore.NewConfigCache(s.rdb, s.keys), mysqlstore.NewPopupRepo(s.db)
	srm := newSRMMonitor(repo.ListWithExperiments, mysqlstore.NewStatsRepo(s.db).ExperimentDays, log, s.reg)
	g, gctx := errgroup.WithContext(ctx)
	for _, d := range deps {
		g.Go(func() error { return d.Run(gctx) })
	}
	g.Go(func() error { return s.coverage.Run(gctx) })
	g.Go(func() error {
		if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("worker listener: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 5*time.Second)
		defer cancel()
		return s.srv.Shutdown(sctx)
	})
	afterUp := []func(context.Context) error{
		func(ctx context.Context) error {
			log.Info("popup-worker draining")
			return s.drain.Run(ctx)
		},
		func(ctx context.Context) error {
			warmLoop(ctx, cfg.WarmInterval, s.warmNow, log, func(ctx context.Context) (int64, error) {
				return snapshot.Warm(ctx, repo, cache)
			})
			return nil
		},
		func(ctx context.Context) error { s.retention.maintainLoop(ctx, retentionEvery); return nil },
		func(ctx context.Context) error { s.retention.backfill(ctx); return nil },
		func(ctx context.Context) error { s.retention.statesLoop(ctx, retentionEvery); return nil },
		func(ctx context.Context) error { srm.run(ctx, srmEvery); return nil },
	}
	if s.known != nil {
		afterUp = append(afterUp, func(ctx context.Context) error { s.known.run(ctx); return nil })
	}
	if s.eraser.Keyed != nil {
		afterUp = append(afterUp, s.eraser.Run)
	}
	for _, run := range afterUp {
		g.Go(func() error {
			if !waitUp(gctx, deps) {
				return nil
			}
			return run(gctx)
		})
	}
	err := g.Wait()
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
