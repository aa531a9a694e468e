package apiserver

import (
	"context"
	"time"

	"popupsvc/internal/admin/status"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/redisstore"
)

// statusPorts are the stores and watchers the status view reads (internal/admin/status).
func (s *server) statusPorts(erasures *mysqlstore.PrivacyRepo) status.Ports {
	p := status.Ports{MySQL: s.mysqlDep, Redis: s.redisDep, Ready: s.public.Ready,
		ConfigVersion: func() int64 {
			if sn := s.holder.Load(); sn != nil {
				return sn.Version
			}
			return 0
		},
		// The config cache's client: its timeout allows a few shards' reads one after another.
		Queue:     queueBacklog{queue: redisstore.NewQueue(s.cfgRDB, s.keys, time.Minute), shards: s.keys.Shards},
		Retention: mysqlstore.NewLogPartitions(s.db), LogRetention: s.cfg.ActionLogRetention,
		Audiences: heldAudiences{s}, Erasures: erasures,
	}
	if s.coverage != nil { // a nil *CoverageCheck in the interface would not be nil
		p.Coverage = s.coverage
	}
	return p
}

// queueBacklog sums the event queue's shards.
type queueBacklog struct {
	queue  *redisstore.Queue
	shards int
}

func (q queueBacklog) Backlog(ctx context.Context) (status.Backlog, error) {
	var b status.Backlog
	for shard := range max(q.shards, 1) { // Keys.Shard: 0 or 1 is one shard
		st, err := q.queue.Stats(ctx, shard)
		if err != nil {
			return status.Backlog{}, err
		}
		b.Waiting += st.Length
		b.Processing += st.ProcessingTotal()
		b.Dead += st.Dead
		if !st.OldestAt.IsZero() && (b.OldestAt.IsZero() || st.OldestAt.Before(b.OldestAt)) {
			b.OldestAt = st.OldestAt
		}
	}
	return b, nil
}

// heldAudiences is this instance's audience sets and the popups the snapshot answers fail-closed.
type heldAudiences struct{ s *server }

func (h heldAudiences) Held() int { return h.s.loader.Sets().Len() }

func (h heldAudiences) FailClosed() []int64 {
	sn := h.s.holder.Load()
	if sn == nil {
		return nil
	}
	var ids []int64
	for _, c := range sn.Unbound() {
		ids = append(ids, c.Popup.ID)
	}
	return ids
}
