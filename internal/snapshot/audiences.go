package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"popupsvc/internal/audience"
)

// AudienceSource is the durable audience store (mysqlstore.AudienceRepo).
type AudienceSource interface {
	// Versions returns the current version of each audience of ids that exists.
	Versions(ctx context.Context, ids []int64) (map[int64]int64, error)
	// LoadSet returns audience id's current set, applying only later deltas to have when it can.
	LoadSet(ctx context.Context, id int64, have *audience.Set) (*audience.Set, error)
}

// HeapBudget is told the bytes of the audience sets held, after every sync.
type HeapBudget interface {
	Held(bytes int64)
}

// AudienceLoader holds the member sets of the audiences the config's popups target, each at the
// newest version it could load, and publishes them as one immutable audience.Sets: a request
// sees a whole version of every list or the one before it, never part of one. A set is replaced
// only once its successor is loaded, so a member the new version keeps is a member throughout
// the change; an audience it holds no version of is answered fail-closed by the popups (see
// popup.Compiled.BindAudiences). A failed load keeps what it holds: loaded audiences keep serving
// while MySQL is down.
type AudienceLoader struct {
	Source AudienceSource
	// Memory bounds the bytes of the sets held (POPUP_AUDIENCE_MEMORY): a set that would take
	// them past it is not loaded (its popups stay fail-closed) and the refusal is logged.
	Memory int64
	// Poll is how often the versions are checked without a Kick.
	Poll time.Duration
	Log  *slog.Logger
	// OnChange, when set, is told of every new generation of sets (the refresher rebuilds the
	// snapshot on them).
	OnChange func(*audience.Sets)
	// Budget, when set, is told what the sets hold after every sync (memlimit.Governor keeps
	// the collector's limit from it).
	Budget HeapBudget

	cur        atomic.Pointer[audience.Sets]
	failClosed atomic.Uint64
	mu         sync.Mutex
	want       []int64
	gen        uint64
	kickOnce   sync.Once
	kick       chan struct{}
	// Loads counts the sets loaded, OverMemory the ones refused for the memory bound.
	Loads, OverMemory atomic.Uint64
}

// Sets returns the sets held now: before the first load, an empty generation 0 (whose popups
// answer fail-closed, and are counted).
func (l *AudienceLoader) Sets() *audience.Sets {
	if s := l.cur.Load(); s != nil {
		return s
	}
	return audience.NewSets(0, nil, &l.failClosed)
}

// FailClosed is the number of audience checks answered without their set.
func (l *AudienceLoader) FailClosed() uint64 { return l.failClosed.Load() }

// Want sets the audiences to hold (those the config's popups target) and asks for a check of
// their versions now: a config change may be a new version of one.
func (l *AudienceLoader) Want(ids []int64) {
	l.mu.Lock()
	l.want = slices.Clone(ids)
	l.mu.Unlock()
	l.Kick()
}

// Kick asks a running loader to check the versions now.
func (l *AudienceLoader) Kick() {
	select {
	case l.kicks() <- struct{}{}:
	default:
	}
}

func (l *AudienceLoader) kicks() chan struct{} {
	l.kickOnce.Do(func() { l.kick = make(chan struct{}, 1) })
	return l.kick
}

// Sync brings the held sets up to the wanted audiences' current versions, as far as the source
// and the memory bound allow, and publishes a new generation when anything changed.
func (l *AudienceLoader) Sync(ctx context.Context) error {
	l.mu.Lock()
	want := l.want
	l.mu.Unlock()
	cur := l.cur.Load()
	var versions map[int64]int64
	if len(want) > 0 {
		var err error
		if versions, err = l.Source.Versions(ctx, want); err != nil {
			return fmt.Errorf("audience versions: %w", err)
		}
	}
	next := make(map[int64]*audience.Set, len(want))
	var used int64
	for _, id := range want {
		if have := cur.Get(id); have != nil {
			if _, exists := versions[id]; exists {
				next[id] = have
				used += have.Bytes()
			}
		}
	}
	var errs []error
	if l.Budget != nil {
		defer func() { l.Budget.Held(used) }()
	}
	for _, id := range want {
		v, exists := versions[id]
		have := next[id]
		if !exists || have != nil && have.Version() >= v {
			continue
		}
		set, err := l.Source.LoadSet(ctx, id, have)
		if err != nil {
			errs = append(errs, fmt.Errorf("load audience %d: %w", id, err))
			continue
		}
		if used-have.BytesOrZero()+set.Bytes() > l.Memory {
			l.OverMemory.Add(1)
			l.Log.Error("audience not loaded: it would take the audiences past POPUP_AUDIENCE_MEMORY",
				"audience", id, "version", set.Version(), "members", set.Len(), "bytes", set.Bytes(), "held_bytes", used, "limit", l.Memory)
			continue
		}
		used += set.Bytes() - have.BytesOrZero()
		next[id] = set
		l.Loads.Add(1)
	}
	if cur != nil && maps.EqualFunc(next, cur.Map(), func(a, b *audience.Set) bool { return a == b }) {
		return errors.Join(errs...)
	}
	if cur == nil && len(next) == 0 && len(errs) > 0 {
		return errors.Join(errs...)
	}
	l.mu.Lock()
	l.gen++
	sets := audience.NewSets(l.gen, next, &l.failClosed)
	l.mu.Unlock()
	l.cur.Store(sets)
	if l.OnChange != nil {
		l.OnChange(sets)
	}
	return errors.Join(errs...)
}

// Run syncs on every Kick and every Poll until ctx ends; a failure keeps the sets held and is
// logged once until it heals. It returns nil when ctx ends.
func (l *AudienceLoader) Run(ctx context.Context) error {
	kick := l.kicks()
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-tick.C:
		}
		err := l.Sync(ctx)
		switch {
		case err != nil && ctx.Err() == nil && err.Error() != lastErr:
			l.Log.Warn("audience load failed; serving the sets held (popups of audiences not held stay fail-closed)", "err", err)
			lastErr = err.Error()
		case err == nil && lastErr != "":
			l.Log.Info("audience loads recovered")
			lastErr = ""
		}
	}
}
