package workerserver

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"popupsvc/internal/backoff"
	"popupsvc/internal/event"
	"popupsvc/internal/redisstore"
)

// knownUsers keeps the known-users filters of every shard (redisstore.KnownUsers) whole: it adds
// the uids of every committed batch, and rebuilds from popup_user_state a filter Redis lost.
type knownUsers struct {
	f      *redisstore.KnownUsers
	rdb    redis.UniversalClient
	scan   func(ctx context.Context, after string, limit int) ([]string, error)
	rate   int // uids per second read from MySQL while rebuilding
	every  time.Duration
	log    *slog.Logger
	shards int

	complete *prometheus.GaugeVec
	scanned  prometheus.Counter
	rebuilds *prometheus.CounterVec
	addFails prometheus.Counter
}

// knownLease is how long a rebuild's lease lives without a step; a worker that died mid-rebuild
// leaves the filter to another after this.
const knownLease = 30 * time.Second

func newKnownUsers(f *redisstore.KnownUsers, rdb redis.UniversalClient, shards, rate int,
	scan func(context.Context, string, int) ([]string, error), log *slog.Logger, reg prometheus.Registerer) *knownUsers {
	k := &knownUsers{f: f, rdb: rdb, scan: scan, rate: rate, every: 10 * time.Second, log: log, shards: shards,
		complete: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "popup_known_users_complete",
			Help: "1 when the shard's known-users filter is complete (a state miss of an unseen uid costs no SQL), 0 while it is missing or being rebuilt.",
		}, []string{"shard"}),
		scanned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_known_users_rebuild_uids_total",
			Help: "uids read from popup_user_state by known-users filter rebuilds (progress of a rebuild).",
		}),
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "popup_known_users_rebuilds_total",
			Help: "Known-users filter rebuilds by result: done (marked complete), lost (the filter was lost or taken over meanwhile; started again), error.",
		}, []string{"result"}),
		addFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_known_users_add_errors_total",
			Help: "Failed additions of a written batch's uids to the known-users filter (the batch is written all the same).",
		}),
	}
	for _, r := range []string{"done", "lost", "error"} {
		k.rebuilds.WithLabelValues(r)
	}
	reg.MustRegister(k.complete, k.scanned, k.rebuilds, k.addFails)
	return k
}

// written adds the uids of a committed batch of shard: a uid whose state reached MySQL after a
// rebuild scanned past it (or while its filter was lost) is in the filter all the same.
func (k *knownUsers) written(ctx context.Context, shard int, events []event.Event) {
	seen := make(map[string]struct{}, len(events))
	uids := make([]string, 0, len(events))
	for i := range events {
		if _, ok := seen[events[i].UID]; !ok {
			seen[events[i].UID] = struct{}{}
			uids = append(uids, events[i].UID)
		}
	}
	if err := k.f.Add(ctx, k.rdb, shard, uids); err != nil {
		k.addFails.Inc()
		k.log.Warn("add written uids to the known-users filter", "shard", shard, "err", err)
	}
}

// run checks every shard's filter now and every k.every, and rebuilds those that are incomplete
// (one scan of the state table serves every shard this worker rebuilds).
func (k *knownUsers) run(ctx context.Context) {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		k.rebuild(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (k *knownUsers) rebuild(ctx context.Context) {
	// active: begun and not ended; failed: ended on an error. Both let go of their leases when
	// this returns, so that the next check begins them again instead of waiting for the leases
	// to run out; past ctx, whose end may be why they stopped.
	var active, failed []*redisstore.Rebuild
	defer func() {
		for _, r := range append(failed, active...) {
			if err := r.Abandon(context.WithoutCancel(ctx)); err != nil {
				k.log.Warn("known-users rebuild: drop the lease", "shard", r.Shard(), "err", err)
			}
		}
	}()
	for shard := range k.shards {
		r, err := k.f.BeginRebuild(ctx, k.rdb, shard, knownLease.Milliseconds())
		if err != nil {
			// the shards begun so far are rebuilt all the same: their leases would keep
			// every worker out of them until they ran out
			k.log.Warn("known-users filter check", "shard", shard, "err", err)
			break
		}
		if r != nil {
			active = append(active, r)
			k.complete.WithLabelValues(strconv.Itoa(shard)).Set(0)
			continue
		}
		done, err := k.f.Complete(ctx, k.rdb, shard)
		if err == nil {
			k.complete.WithLabelValues(strconv.Itoa(shard)).Set(b2f(done))
		}
	}
	if len(active) == 0 {
		return
	}
	k.log.Info("rebuilding known-users filters from popup_user_state", "shards", len(active), "uids_per_s", k.rate)
	const chunk = 1000
	pace := time.Duration(float64(chunk) / float64(k.rate) * float64(time.Second))
	after, total := "", 0
	for len(active) > 0 {
		began := time.Now()
		uids, err := k.scan(ctx, after, chunk)
		if err != nil {
			k.rebuilds.WithLabelValues("error").Add(float64(len(active)))
			k.log.Warn("known-users rebuild: read MySQL; trying again at the next check", "err", err)
			return
		}
		byShard := make(map[int][]string, len(active))
		for _, uid := range uids {
			s := k.f.Keys.Shard(uid)
			byShard[s] = append(byShard[s], uid)
		}
		kept := active[:0]
		for _, r := range active {
			ok, err := r.Add(ctx, byShard[r.Shard()])
			switch {
			case err != nil:
				k.rebuilds.WithLabelValues("error").Inc()
				k.log.Warn("known-users rebuild: write Redis; trying again at the next check", "shard", r.Shard(), "err", err)
				failed = append(failed, r)
			case !ok:
				k.rebuilds.WithLabelValues("lost").Inc()
				k.log.Warn("known-users filter lost or taken over during its rebuild; starting again at the next check", "shard", r.Shard())
			default:
				kept = append(kept, r)
			}
		}
		active = kept
		k.scanned.Add(float64(len(uids)))
		total += len(uids)
		if len(uids) < chunk {
			break
		}
		after = uids[len(uids)-1]
		if !backoff.Wait(ctx, pace-time.Since(began)) {
			return
		}
	}
	finishing := active
	active = nil
	for _, r := range finishing {
		ok, err := r.Finish(ctx)
		shard := strconv.Itoa(r.Shard())
		switch {
		case err != nil:
			k.rebuilds.WithLabelValues("error").Inc()
			k.log.Warn("known-users rebuild: finish", "shard", r.Shard(), "err", err)
			failed = append(failed, r)
		case !ok:
			k.rebuilds.WithLabelValues("lost").Inc()
		default:
			k.rebuilds.WithLabelValues("done").Inc()
			k.complete.WithLabelValues(shard).Set(1)
			k.log.Info("known-users filter rebuilt", "shard", r.Shard(), "uids_scanned", total)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
