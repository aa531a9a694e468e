package workerserver

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"popupsvc/internal/config"
	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/privacy"
	"popupsvc/internal/redisstore"
)

// The erasures popup-worker runs (docs/CONTRACT.md §12): every worker polls for pending ones, so
// an erasure completes whichever popup-api accepted it, and one a dying worker held is taken over
// once its lease runs out. Together with the poll, the lease bounds the time to done within the
// contract's minute: erasurePoll + erasureLease + one erasure.
const (
	erasurePoll  = time.Second
	erasureLease = 20 * time.Second
	// erasureDrained bounds one attempt's wait for the batches workers hold (a dead worker's goes
	// back to the queue after POPUP_WORKER_LEASE, and the next attempt purges it).
	erasureDrained = 10 * time.Second
)

// eraser is the worker's privacy.Eraser with its metrics.
type eraser struct {
	*privacy.Eraser
	droppedEvents prometheus.Counter
}

// dropped counts the events of erased users a batch dropped.
func (e *eraser) dropped(n int) { e.droppedEvents.Add(float64(n)) }

// newEraser builds the eraser; its Keyed is nil (erasures off, no event dropped) without
// POPUP_PRIVACY_KEY.
func newEraser(cfg config.Config, db *sql.DB, rdb redis.UniversalClient, keys redisstore.Keys, worker string, log *slog.Logger, reg prometheus.Registerer) (*eraser, error) {
	e := &eraser{droppedEvents: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "popup_worker_erased_events_dropped_total",
		Help: "Events of erased users the worker dropped instead of writing (queued before the erasure; docs/CONTRACT.md §12).",
	})}
	reg.MustRegister(e.droppedEvents, newErasureCollector(mysqlstore.NewPrivacyRepo(db).Pending, log))
	e.Eraser = &privacy.Eraser{Store: mysqlstore.NewPrivacyRepo(db), Cache: redisstore.NewEraser(rdb, keys),
		Audiences: manage.NewAudiences(audienceStore{mysqlstore.NewAudienceRepo(db)}, nil, int64(cfg.AudienceMemory), time.Now),
		Now:       time.Now, Log: log, Owner: worker, Lease: erasureLease, Poll: erasurePoll,
		Settle: redisstore.StateLoadTimeout, Drained: erasureDrained}
	if cfg.PrivacyKey == "" {
		log.Warn("POPUP_PRIVACY_KEY is not set: user erasures are off")
		return e, nil
	}
	k, err := privacy.NewKeyed(cfg.PrivacyKey)
	if err != nil {
		return nil, fmt.Errorf("POPUP_PRIVACY_KEY: %w", err)
	}
	e.Keyed = k
	return e, nil
}

// audienceStore is the audience repository as the member writes take it (its transaction as
// manage.AudienceTx).
type audienceStore struct{ *mysqlstore.AudienceRepo }

func (s audienceStore) InTx(ctx context.Context, fn func(manage.AudienceTx) error) error {
	return manage.AudienceTxFunc[*mysqlstore.Tx](s.AudienceRepo.InTx).InTx(ctx, fn)
}

// erasureCollector reports the pending erasures at scrape time: how many, and how long the oldest
// has waited, which the contract bounds at a minute (docs/CONTRACT.md §12; the alert rules in
// deploy/prometheus watch it). A scrape that cannot read them reports neither.
type erasureCollector struct {
	pending    func(ctx context.Context) (int, time.Time, error) // PrivacyRepo.Pending
	now        func() time.Time
	timeout    time.Duration
	log        *slog.Logger
	count, age *prometheus.Desc
}

func newErasureCollector(pending func(context.Context) (int, time.Time, error), log *slog.Logger) *erasureCollector {
	return &erasureCollector{pending: pending, now: time.Now, timeout: 2 * time.Second, log: log,
		count: prometheus.NewDesc("popup_erasures_pending", "Erasures requested and not done yet.", nil, nil),
		age: prometheus.NewDesc("popup_erasure_oldest_pending_age_seconds",
			"How long the oldest pending erasure has waited (0 when none); the contract promises a minute.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *erasureCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.count; ch <- c.age }

// Collect implements prometheus.Collector.
func (c *erasureCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	n, oldest, err := c.pending(ctx)
	if err != nil {
		c.log.Debug("metrics: pending erasures", "err", err)
		return
	}
	age := 0.0
	if !oldest.IsZero() {
		age = max(c.now().Sub(oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age)
}
