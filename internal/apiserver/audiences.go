package apiserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/audience"
	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/snapshot"
)

// settleAudiences returns a channel closed once the snapshot holds every audience its active
// popups target, or timeout after the first snapshot, whichever comes first; an instance
// reports ready only then, so that it does not take traffic while its audience popups would
// all answer fail-closed. A timeout is logged with the popups still waiting.
func settleAudiences(ctx context.Context, holder *snapshot.Holder, timeout time.Duration, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		const every = 20 * time.Millisecond
		tick := time.NewTicker(every)
		defer tick.Stop()
		var deadline <-chan time.Time
		for {
			if s := holder.Load(); s != nil {
				unbound := s.Unbound()
				if len(unbound) == 0 {
					return
				}
				if deadline == nil {
					t := time.NewTimer(timeout)
					defer t.Stop()
					deadline = t.C
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-deadline:
				ids := make([]int64, 0)
				for _, c := range holder.Load().Unbound() {
					ids = append(ids, c.Popup.ID)
				}
				log.Warn("ready without every audience loaded (POPUP_AUDIENCE_LOAD_TIMEOUT): these popups answer fail-closed until theirs are",
					"popups", ids, "timeout", timeout)
				return
			case <-tick.C:
			}
		}
	}()
	return done
}

// registerAudienceMetrics exposes the loader's state on /metrics.
func registerAudienceMetrics(reg prometheus.Registerer, l *snapshot.AudienceLoader, holder *snapshot.Holder) {
	sum := func(f func(*audience.Set) float64) func() float64 {
		return func() float64 {
			var n float64
			l.Sets().Each(func(s *audience.Set) { n += f(s) })
			return n
		}
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "popup_audience_fail_closed_total",
			Help: "Audience checks answered without the audience's set (not loaded on this instance): not a member of an include, a member of an exclude."},
			func() float64 { return float64(l.FailClosed()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "popup_audience_loads_total",
			Help: "Audience sets loaded (a new version or a new audience)."},
			func() float64 { return float64(l.Loads.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "popup_audience_over_memory_total",
			Help: "Audience sets not loaded because they would take the audiences past POPUP_AUDIENCE_MEMORY."},
			func() float64 { return float64(l.OverMemory.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "popup_audiences_held", Help: "Audience sets held."},
			func() float64 { return float64(l.Sets().Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "popup_audience_members", Help: "Members of the audience sets held."},
			sum(func(s *audience.Set) float64 { return float64(s.Len()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "popup_audience_bytes", Help: "Memory of the audience sets held."},
			sum(func(s *audience.Set) float64 { return float64(s.Bytes()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "popup_audience_unbound_popups",
			Help: "Active popups that target an audience this instance does not hold (answering fail-closed)."},
			func() float64 {
				if s := holder.Load(); s != nil {
					return float64(len(s.Unbound()))
				}
				return 0
			}),
	)
}

// audienceStore is the audience repository as the audience use case takes it: its transaction
// in the use case's terms.
type audienceStore struct{ *mysqlstore.AudienceRepo }

func (s audienceStore) InTx(ctx context.Context, fn func(manage.AudienceTx) error) error {
	return manage.AudienceTxFunc[*mysqlstore.Tx](s.AudienceRepo.InTx).InTx(ctx, fn)
}

// heldSets gives an audience's current set from the loader's when it holds the current version
// (a check of a uid, a delta's count, the list streamed back), and otherwise loads it from the
// store, starting from the held set when there is one.
type heldSets struct {
	loader *snapshot.AudienceLoader
	store  audienceStore
}

func (h heldSets) Current(ctx context.Context, id int64) (*audience.Set, error) {
	have := h.loader.Sets().Get(id)
	if have != nil {
		vs, err := h.store.Versions(ctx, []int64{id})
		if err != nil {
			return nil, err
		}
		if v, ok := vs[id]; ok && v == have.Version() {
			return have, nil
		}
	}
	return h.store.LoadSet(ctx, id, have)
}
