// Package drain is popup-worker's loop: claim a batch of events from the Redis queue, write it to
// MySQL, acknowledge it; retry what can be retried, dead-letter what never will be written.
package drain

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"popupsvc/internal/backoff"
	"popupsvc/internal/event"
	"popupsvc/internal/redisstore"
)

// Sink is where events go: MySQL's *mysqlstore.EventWriter in production. WriteBatch must be
// idempotent (a batch may be written again after a crash between commit and acknowledgement).
// An error with a `Permanent() bool` method that returns true means some event of the batch will
// never be accepted; any other error is retried.
type Sink interface {
	WriteBatch(ctx context.Context, events []event.Event) error
}

// Config tunes a Drain.
type Config struct {
	Worker     string        // this worker's id, unique among live workers (see WorkerID)
	Shards     int           // queue shards to drain: 0 .. Shards-1
	BatchSize  int           // events per claim and per MySQL batch
	FlushEvery time.Duration // after a short batch, how long to let the queue fill before claiming again
	Lease      time.Duration // a worker silent this long is dead: heartbeat every Lease/3, reclaim every Lease/2
	Grace      time.Duration // once Run's context ends, how long the batch in hand may still take
	MaxBackoff time.Duration // cap of the retry back-off while MySQL or Redis is down (default 5 s)
	// Failpoint, when set, is called at the named points of the loop (FailpointAfterCommit). Tests
	// use it to crash the process where it hurts most. Never set in production.
	Failpoint func(point string)
	// Written, when set, is told of every committed batch of shard before it is acknowledged
	// (the worker adds the batch's uids to the known-users filter). It must not fail the batch.
	Written func(ctx context.Context, shard int, events []event.Event)
}

// FailpointAfterCommit is reached when a batch is committed to MySQL and not yet acknowledged.
const FailpointAfterCommit = "after-commit-before-ack"

// WorkerID returns a worker id unique among live workers: hostname-pid-random.
func WorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [4]byte
	_, _ = crand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Drain moves events from the queue's shards into a Sink.
type Drain struct {
	queue *redisstore.Queue
	sink  Sink
	cfg   Config
	log   *slog.Logger
	m     *Metrics
}

// New returns a drain; m may be nil (no metrics).
func New(queue *redisstore.Queue, sink Sink, cfg Config, log *slog.Logger, m *Metrics) *Drain {
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if cfg.Shards <= 0 {
		cfg.Shards = 1
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Drain{queue: queue, sink: sink, cfg: cfg, log: log.With("worker", cfg.Worker), m: m}
}

// Run drains every shard until ctx ends. Then it stops claiming, lets the batch in hand finish
// (written and acknowledged) for up to Config.Grace, puts back whatever it could not finish at
// the head of the queue, and returns. It never gives an event up: while MySQL or Redis is down it
// retries, backing off.
func (d *Drain) Run(ctx context.Context) error {
	// work carries the batches in hand: it outlives ctx by Grace.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	go func() {
		select {
		case <-ctx.Done():
		case <-work.Done():
			return
		}
		t := time.NewTimer(d.cfg.Grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelWork()
		case <-work.Done():
		}
	}()

	beat, stopBeat := context.WithCancel(work)
	defer stopBeat()
	d.heartbeat(beat)
	var helpers sync.WaitGroup
	helpers.Go(func() { d.heartbeatLoop(beat) })
	helpers.Go(func() { d.reclaimLoop(ctx) })

	var shards sync.WaitGroup
	for shard := range d.cfg.Shards {
		shards.Go(func() { d.drainShard(ctx, work, shard) })
	}
	shards.Wait()
	stopBeat()
	helpers.Wait()

	// Whatever is still in our processing lists goes back to the head of the queue now, rather
	// than when our lease expires.
	bye, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for shard := range d.cfg.Shards {
		n, err := d.queue.Release(bye, shard, d.cfg.Worker)
		switch {
		case err != nil:
			d.log.Warn("release processing list; it is reclaimed when the lease expires", "shard", shard, "err", err)
		case n > 0:
			d.log.Info("returned unfinished events to the queue", "shard", shard, "events", n)
		}
	}
	return nil
}

// drainShard is the loop of one shard: finish our own processing list, then claim, write, ack.
func (d *Drain) drainShard(ctx, work context.Context, shard int) {
	bo := d.backoff()
	log := d.log.With("shard", shard)
	for ctx.Err() == nil {
		raws, err := d.queue.Pending(ctx, shard, d.cfg.Worker, d.cfg.BatchSize)
		if err == nil && len(raws) == 0 {
			raws, err = d.queue.Claim(ctx, shard, d.cfg.Worker, d.cfg.BatchSize)
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("claim events; retrying", "err", err)
				bo.wait(ctx)
			}
			continue
		}
		if len(raws) == 0 {
			backoff.Wait(ctx, d.cfg.FlushEvery)
			continue
		}
		if err := d.process(work, shard, raws); err != nil {
			if work.Err() != nil {
				return // grace is over: Run returns the batch to the queue
			}
			// A Redis call (dead-letter or ack) failed: the batch is still in our processing
			// list, Pending returns it, and writing it again is harmless.
			log.Warn("finish batch; retrying", "err", err)
			bo.wait(ctx)
			continue
		}
		bo.reset()
		if len(raws) < d.cfg.BatchSize {
			backoff.Wait(ctx, d.cfg.FlushEvery)
		}
	}
}

// process writes one claimed batch and acknowledges it. Undecodable events and events the sink
// rejects for good are moved to the dead-letter list instead.
func (d *Drain) process(ctx context.Context, shard int, raws []string) error {
	events := make([]event.Event, 0, len(raws))
	good := make([]string, 0, len(raws))
	held := len(raws) // events of the batch still in our processing list
	for _, raw := range raws {
		ev, err := event.Decode([]byte(raw))
		if err != nil {
			moved, err := d.deadLetter(ctx, shard, raw, err.Error(), "undecodable")
			if err != nil {
				return err
			}
			if moved {
				held--
			}
			continue
		}
		events = append(events, ev)
		good = append(good, raw)
	}
	moved, err := d.write(ctx, shard, events, good, d.backoff())
	if err != nil {
		return err
	}
	held -= moved
	if d.cfg.Written != nil {
		d.cfg.Written(ctx, shard, events)
	}
	if d.cfg.Failpoint != nil {
		d.cfg.Failpoint(FailpointAfterCommit)
	}
	return d.queue.Ack(ctx, shard, d.cfg.Worker, held)
}

// write writes events, retrying as long as ctx lasts. A permanent rejection splits the batch in
// halves until the rejected events stand alone; those go to the dead-letter list and the rest is
// written. It returns how many events it moved to the dead-letter list.
func (d *Drain) write(ctx context.Context, shard int, events []event.Event, raws []string, bo *retries) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := d.sink.WriteBatch(ctx, events)
		d.m.batchDuration.Observe(time.Since(start).Seconds())
		if err == nil {
			d.m.batches.WithLabelValues("ok").Inc()
			if attempt > 1 {
				d.log.Info("MySQL writes resumed", "shard", shard, "attempts", attempt)
			}
			return 0, nil
		}
		if isPermanent(err) {
			d.m.batches.WithLabelValues("rejected").Inc()
			d.m.mysqlErrors.WithLabelValues("permanent").Inc()
			if len(events) == 1 {
				moved, derr := d.deadLetter(ctx, shard, raws[0], err.Error(), "rejected")
				if derr != nil || !moved {
					return 0, derr
				}
				return 1, nil
			}
			mid := len(events) / 2
			a, err := d.write(ctx, shard, events[:mid], raws[:mid], bo)
			if err != nil {
				return a, err
			}
			b, err := d.write(ctx, shard, events[mid:], raws[mid:], bo)
			return a + b, err
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("write batch: %w", err)
		}
		d.m.batches.WithLabelValues("error").Inc()
		d.m.mysqlErrors.WithLabelValues("transient").Inc()
		d.log.Warn("write batch; keeping it and retrying", "shard", shard, "events", len(events), "attempt", attempt, "err", err)
		if !bo.wait(ctx) {
			return 0, fmt.Errorf("write batch: %w", errors.Join(err, ctx.Err()))
		}
	}
}

// deadLetter moves raw to the dead-letter list and reports whether raw was still ours to move. A
// Redis error goes back to the shard loop, which starts the batch again from our processing list.
func (d *Drain) deadLetter(ctx context.Context, shard int, raw, reason, cause string) (bool, error) {
	moved, err := d.queue.DeadLetter(ctx, shard, d.cfg.Worker, raw, reason, time.Now())
	if err != nil {
		return false, err
	}
	if moved {
		d.m.deadLetters.WithLabelValues(cause).Inc()
		d.log.Warn("event moved to the dead-letter list", "shard", shard, "cause", cause, "reason", reason, "event", truncate(raw, 256))
	}
	return moved, nil
}

func (d *Drain) heartbeat(ctx context.Context) {
	for shard := range d.cfg.Shards {
		if err := d.queue.Heartbeat(ctx, shard, d.cfg.Worker); err != nil && ctx.Err() == nil {
			d.log.Warn("heartbeat", "shard", shard, "err", err)
		}
	}
}

func (d *Drain) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(max(d.cfg.Lease/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.heartbeat(ctx)
		}
	}
}

// reclaimLoop returns the processing lists of dead workers to their queues.
func (d *Drain) reclaimLoop(ctx context.Context) {
	t := time.NewTicker(max(d.cfg.Lease/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		d.reclaim(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Drain) reclaim(ctx context.Context) {
	for shard := range d.cfg.Shards {
		workers, err := d.queue.Workers(ctx, shard)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("list workers", "shard", shard, "err", err)
			}
			continue
		}
		for _, w := range workers {
			if w == d.cfg.Worker {
				continue
			}
			n, err := d.queue.Reclaim(ctx, shard, w)
			switch {
			case errors.Is(err, redisstore.ErrLeaseAlive):
			case err != nil:
				if ctx.Err() == nil {
					d.log.Warn("reclaim", "shard", shard, "dead_worker", w, "err", err)
				}
			default:
				d.m.reclaimed.Add(float64(n))
				d.log.Info("reclaimed the processing list of a dead worker", "shard", shard, "dead_worker", w, "events", n)
			}
		}
	}
}

func isPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// retries counts the attempts of one piece of work on the service's backoff schedule
// (internal/backoff), so that workers that failed together do not retry in lockstep.
type retries struct {
	schedule backoff.Backoff
	attempt  int
}

func (d *Drain) backoff() *retries {
	return &retries{schedule: backoff.Backoff{Min: min(100*time.Millisecond, d.cfg.MaxBackoff), Max: d.cfg.MaxBackoff}}
}

// wait sleeps for the next delay; false if ctx ended first.
func (r *retries) wait(ctx context.Context) bool {
	ok := r.schedule.Sleep(ctx, r.attempt)
	r.attempt++
	return ok
}

func (r *retries) reset() { r.attempt = 0 }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
