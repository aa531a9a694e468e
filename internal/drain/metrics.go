package drain

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/redisstore"
)

// Metrics are the drain's counters. Base units: seconds, events, rows.
type Metrics struct {
	batches       *prometheus.CounterVec
	rows          *prometheus.CounterVec
	deadLetters   *prometheus.CounterVec
	reclaimed     prometheus.Counter
	batchDuration prometheus.Histogram
	mysqlErrors   *prometheus.CounterVec
}

// NewMetrics creates the drain's metrics and registers them with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "popup_worker_batches_total",
			Help: "MySQL batch write attempts by result: ok, error (retried), rejected (split to find the bad event).",
		}, []string{"result"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "popup_worker_rows_written_total",
			Help: "Rows written by committed batches: new action-log rows (replays excluded) and upserted user-state rows.",
		}, []string{"table"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "popup_worker_dead_letters_total",
			Help: "Events moved to the dead-letter list, by cause: undecodable or rejected (by MySQL).",
		}, []string{"cause"}),
		reclaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_worker_reclaimed_events_total",
			Help: "Events returned to the queue from the processing lists of dead workers.",
		}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "popup_worker_batch_duration_seconds",
			Help:    "Duration of one MySQL batch write attempt.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		mysqlErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "popup_mysql_errors_total",
			Help: "Failed MySQL batch writes, by kind: transient (retried) or permanent (a rejected value).",
		}, []string{"kind"}),
	}
	for _, r := range []string{"ok", "error", "rejected"} {
		m.batches.WithLabelValues(r)
	}
	for _, c := range []string{"undecodable", "rejected"} {
		m.deadLetters.WithLabelValues(c)
	}
	for _, k := range []string{"transient", "permanent"} {
		m.mysqlErrors.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.batches, m.rows, m.deadLetters, m.reclaimed, m.batchDuration, m.mysqlErrors)
	}
	return m
}

// RowsWritten counts rows a committed batch wrote to table (hook it to EventWriter.OnRows).
func (m *Metrics) RowsWritten(table string, rows int64) {
	m.rows.WithLabelValues(table).Add(float64(rows))
}

// QueueCollector reports the queue's sizes at scrape time, one shard after another.
type QueueCollector struct {
	queue   *redisstore.Queue
	shards  int
	timeout time.Duration
	now     func() time.Time

	length, oldestAge, processing, dead, scrapeErrors *prometheus.Desc
}

// NewQueueCollector returns a collector of the queue's shards 0 .. shards-1.
func NewQueueCollector(queue *redisstore.Queue, shards int) *QueueCollector {
	label := []string{"shard"}
	return &QueueCollector{
		queue: queue, shards: shards, timeout: 2 * time.Second, now: time.Now,
		length:       prometheus.NewDesc("popup_queue_length", "Events waiting in the queue.", label, nil),
		oldestAge:    prometheus.NewDesc("popup_queue_oldest_event_age_seconds", "Age of the event at the head of the queue (0 when empty).", label, nil),
		processing:   prometheus.NewDesc("popup_queue_processing_length", "Claimed, unacknowledged events over all workers' processing lists.", label, nil),
		dead:         prometheus.NewDesc("popup_queue_dead_letter_length", "Entries in the dead-letter list.", label, nil),
		scrapeErrors: prometheus.NewDesc("popup_queue_stats_errors", "1 when the queue's sizes could not be read at this scrape.", label, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.length, c.oldestAge, c.processing, c.dead, c.scrapeErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	now := c.now()
	for shard := range c.shards {
		s := strconv.Itoa(shard)
		st, err := c.queue.Stats(ctx, shard)
		if err != nil {
			ch <- prometheus.MustNewConstMetric(c.scrapeErrors, prometheus.GaugeValue, 1, s)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.scrapeErrors, prometheus.GaugeValue, 0, s)
		age := 0.0
		if !st.OldestAt.IsZero() {
			age = max(now.Sub(st.OldestAt).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.length, prometheus.GaugeValue, float64(st.Length), s)
		ch <- prometheus.MustNewConstMetric(c.oldestAge, prometheus.GaugeValue, age, s)
		ch <- prometheus.MustNewConstMetric(c.processing, prometheus.GaugeValue, float64(st.ProcessingTotal()), s)
		ch <- prometheus.MustNewConstMetric(c.dead, prometheus.GaugeValue, float64(st.Dead), s)
	}
}
