package apitest

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/config"
	"popupsvc/internal/drain"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// RelaxedConfig is Config with a request budget that a loaded machine (or -race) does not
// overrun: the tests that use it pin which status an action gets, and a 503 for a slow first
// state load would hide it.
func RelaxedConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := Config(t)
	cfg.RequestBudget = 2 * time.Second
	return cfg
}

// StartWithWorker starts a popup-api (RelaxedConfig) and a drain of its queue into its MySQL in
// this process (RunDrain); db is a connection to that MySQL, closed when the test ends.
func StartWithWorker(t *testing.T) (config.Config, *Instance, *sql.DB) {
	t.Helper()
	cfg := RelaxedConfig(t)
	api := Start(t, cfg, nil)
	db := DB(t, cfg)
	RunDrain(t, cfg, db)
	return cfg, api, db
}

// RunDrain drains the queue into MySQL in this process until the test ends: the part of
// popup-worker that writes events, without its listeners (StartWorker runs the whole worker).
func RunDrain(t *testing.T, cfg config.Config, db *sql.DB) {
	t.Helper()
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	d := drain.New(redisstore.NewQueue(rdb, keys, cfg.WorkerLease), mysqlstore.NewEventWriter(db), drain.Config{
		Worker: drain.WorkerID(), Shards: cfg.Shards(), BatchSize: 100, FlushEvery: 20 * time.Millisecond,
		Lease: cfg.WorkerLease, Grace: time.Second,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)), drain.NewMetrics(prometheus.NewRegistry()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("drain: %v", err)
		}
	})
}
