package workerserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/mysqlstore"
)

// retentionEvery is how often the worker checks the action log's day partitions (days ahead
// made, days past the retention dropped; every worker checks, one at a time alters the table)
// and purges user state (two workers purging at once share the work: each batch locks its rows).
const retentionEvery = 10 * time.Minute

// backfillRetry is the pause before a failed backfill (MySQL down, say) starts again.
const backfillRetry = time.Minute

// logRetention keeps the action log's days (mysqlstore.LogPartitions) and copies the log of
// before migration 00015 into them, with their metrics.
type logRetention struct {
	parts      *mysqlstore.LogPartitions
	maintain   func(ctx context.Context, now, cutoff time.Time) (mysqlstore.Maintenance, error) // parts.Maintain
	keep       time.Duration                                                                    // POPUP_ACTION_LOG_RETENTION
	log        *slog.Logger
	dropped    prometheus.Counter
	backfilled prometheus.Counter

	states     *mysqlstore.StatePurger
	keepStates time.Duration // POPUP_STATE_RETENTION
	statesGone prometheus.Counter
	// maintained is when a run last looked at every partition and dropped what was past the
	// retention (a run skipped because another worker held the lock leaves it).
	maintained prometheus.Gauge
}

func newLogRetention(parts *mysqlstore.LogPartitions, keep time.Duration, states *mysqlstore.StatePurger, keepStates time.Duration,
	log *slog.Logger, reg prometheus.Registerer) *logRetention {
	r := &logRetention{
		parts: parts, keep: keep, states: states, keepStates: keepStates, log: log,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_worker_action_log_dropped_days_total",
			Help: "Day partitions of the action log dropped because their events are older than POPUP_ACTION_LOG_RETENTION.",
		}),
		backfilled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_worker_action_log_backfilled_rows_total",
			Help: "Rows of the action log of before migration 00015 copied into its day partitions.",
		}),
		statesGone: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_worker_user_state_purged_rows_total",
			Help: "popup_user_state rows removed because their popup was archived or ended more than POPUP_STATE_RETENTION ago.",
		}),
		maintained: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "popup_worker_action_log_maintained_timestamp_seconds",
			Help: "When this worker last ran the action log's retention through (every day past POPUP_ACTION_LOG_RETENTION dropped, the days ahead made); 0 before. Workers that find another one holding the lock leave it.",
		}),
	}
	if parts != nil {
		r.maintain = parts.Maintain
	}
	reg.MustRegister(r.dropped, r.backfilled, r.statesGone, r.maintained)
	return r
}

// maintainLoop checks the partitions at once and then every interval until ctx ends. A failed
// check (MySQL down, say) is logged and tried again at the next tick: the days ahead cover a week
// of failures, and old rows only wait.
func (r *logRetention) maintainLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		start := time.Now()
		m, err := r.maintain(ctx, start, start.Add(-r.keep))
		r.dropped.Add(float64(len(m.Dropped)))
		if err == nil && !m.Skipped {
			r.maintained.Set(float64(start.UnixNano()) / 1e9)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("action log partitions", "err", err, "added", m.Added, "dropped", m.Dropped)
		case len(m.Added) > 0 || len(m.Dropped) > 0:
			r.log.Info("action log partitions", "added", m.Added, "dropped", m.Dropped, "took", time.Since(start).Round(time.Millisecond),
				"detaching", m.Detaching.Round(time.Millisecond), "removing", m.Removing.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// statesLoop purges user state at once and then every interval until ctx ends; a failed run is
// logged and tried again at the next tick.
func (r *logRetention) statesLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		start := time.Now()
		n, err := r.states.Purge(ctx, start, start.Add(-r.keepStates), func(n int64) { r.statesGone.Add(float64(n)) })
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("purge user state", "err", err, "removed", n)
		case n > 0:
			r.log.Info("purged user state", "removed", n, "took", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// backfill copies the log of before migration 00015 until it is done (at once when there is
// none), starting again after a pause when it fails.
func (r *logRetention) backfill(ctx context.Context) {
	for {
		start := time.Now()
		n, err := r.parts.Backfill(ctx, time.Now().Add(-r.keep), func(n int64) { r.backfilled.Add(float64(n)) })
		if err == nil {
			if n > 0 {
				r.log.Info("action log backfill done", "copied", n, "took", time.Since(start).Round(time.Second))
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("action log backfill", "err", err, "copied", n)
		t := time.NewTimer(backfillRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
