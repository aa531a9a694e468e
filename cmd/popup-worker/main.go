// Command popup-worker drains the Redis event queue into MySQL in batches and keeps the Redis
// config cache warm; `popup-worker migrate` applies the schema migrations.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"popupsvc/internal/config"
	"popupsvc/internal/configcache"
	"popupsvc/internal/drain"
	"popupsvc/internal/logging"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
)

const usage = `usage: popup-worker [run|migrate]
  run      drain the event queue into MySQL and keep the config cache warm (default)
  migrate  apply the embedded schema migrations (safe to run again)
Configuration: POPUP_* environment variables, see README.md.`

// envFailpoint arms a crash for tests: "after-commit-before-ack[:probability]" SIGKILLs the process
// after a batch is committed and before it is acknowledged. Never set it in production.
const envFailpoint = "POPUP_WORKER_FAILPOINT"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "popup-worker: %s\n%s\n", ue, usage)
		os.Exit(2)
	}
	if err != nil {
		slog.Error("popup-worker stopped", "err", err)
		os.Exit(1)
	}
}

// usageError is a bad command line: main prints the usage and exits 2.
type usageError string

func (e usageError) Error() string { return string(e) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := "run"
	if len(args) > 0 {
		cmd = args[0]
	}
	if len(args) > 1 {
		return usageError(fmt.Sprintf("unexpected arguments %q", args[1:]))
	}
	switch cmd {
	case "run":
	case "migrate":
	case "help", "-h", "-help", "--help":
		_, err := fmt.Fprintln(stdout, usage)
		return err
	default:
		return usageError(fmt.Sprintf("unknown command %q", cmd))
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := logging.New(cfg.LogLevel)
	slog.SetDefault(log)
	if cmd == "migrate" {
		return migrate(ctx, cfg, stdout)
	}
	return serve(ctx, cfg, log)
}

// migrate applies pending migrations and says what it did.
func migrate(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := mysqlstore.Migrate(ctx, db)
	if err != nil {
		return err
	}
	current, _, err := mysqlstore.SchemaVersions(ctx, db)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		_, err = fmt.Fprintf(stdout, "schema is up to date at version %d\n", current)
		return err
	}
	for _, v := range applied {
		if _, err := fmt.Fprintf(stdout, "applied migration %05d\n", v); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(stdout, "schema is now at version %d\n", current)
	return err
}

// serve runs the worker until ctx ends: the drain of every shard, the /metrics and /healthz
// listener and the cache warmer. The first of them to fail stops the others.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	worker := drain.WorkerID()
	log = log.With("worker", worker)
	log.Info("popup-worker starting", "config", cfg.String())

	db, err := mysqlstore.OpenChecked(ctx, cfg.MySQLDSN, cfg.MySQLMaxOpen)
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
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.QueueShards}
	queue := redisstore.NewQueue(rdb, keys, cfg.WorkerLease)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(drain.NewQueueCollector(queue, cfg.QueueShards))
	metrics := drain.NewMetrics(reg)

	writer := mysqlstore.NewEventWriter(db)
	writer.OnRows = metrics.RowsWritten
	if err := writer.CheckBatchSize(ctx, cfg.WorkerBatchSize); err != nil {
		return err
	}
	failpoint, err := parseFailpoint(os.Getenv(envFailpoint))
	if err != nil {
		return err
	}
	if failpoint != nil {
		log.Warn("failpoint armed: this process will kill itself", envFailpoint, os.Getenv(envFailpoint))
	}
	drainer := drain.New(queue, writer, drain.Config{
		Worker: worker, Shards: cfg.QueueShards, BatchSize: cfg.WorkerBatchSize, FlushEvery: cfg.WorkerFlushEvery,
		Lease: cfg.WorkerLease, Grace: cfg.ShutdownTimeout, Failpoint: failpoint,
	}, log, metrics)

	ln, err := net.Listen("tcp", cfg.WorkerAddr)
	if err != nil {
		return fmt.Errorf("worker listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Info("popup-worker listening", "addr", ln.Addr().String(), "shards", cfg.QueueShards)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return drainer.Run(gctx) })
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
		warmLoop(gctx, cfg.WarmInterval, log, func(ctx context.Context) (int64, error) {
			return configcache.Warm(ctx, db, rdb, keys)
		})
		return nil
	})
	err = g.Wait()
	log.Info("popup-worker stopped")
	return err
}

// warmLoop (re)warms the Redis config cache from MySQL at once and every interval, so that a
// flushed or restarted Redis heals without anyone acting.
func warmLoop(ctx context.Context, interval time.Duration, log *slog.Logger, warm func(context.Context) (int64, error)) {
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
		case <-t.C:
		}
	}
}

// parseFailpoint reads POPUP_WORKER_FAILPOINT: "after-commit-before-ack[:probability]".
func parseFailpoint(spec string) (func(string), error) {
	if spec == "" {
		return nil, nil
	}
	name, p, hasP := strings.Cut(spec, ":")
	prob := 1.0
	if hasP {
		var err error
		if prob, err = strconv.ParseFloat(p, 64); err != nil || prob < 0 || prob > 1 {
			return nil, fmt.Errorf("%s: bad probability %q", envFailpoint, p)
		}
	}
	if name != drain.FailpointAfterCommit {
		return nil, fmt.Errorf("%s: unknown failpoint %q (known: %s)", envFailpoint, name, drain.FailpointAfterCommit)
	}
	return func(point string) {
		if point == name && rand.Float64() < prob {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL is not handled; never continue to the acknowledgement
		}
	}, nil
}
