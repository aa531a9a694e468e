package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// Cache is the shared config cache the refresher reads and warms (redisstore.ConfigCache).
// found is false when the cache is empty.
type Cache interface {
	Load(ctx context.Context) (version int64, popups []popup.Popup, team popup.Team, found bool, err error)
	Version(ctx context.Context) (version int64, found bool, err error)
	Publisher
	Subscribe(ctx context.Context, wait time.Duration) (<-chan struct{}, error)
}

// Publisher writes a config version to the cache and announces it (redisstore.ConfigCache).
type Publisher interface {
	Publish(ctx context.Context, version int64, popups []popup.Popup, team popup.Team) (int64, error)
}

// Source is the durable config store (mysqlstore.PopupRepo): the version, its popups and the
// team's settings (a pacing never set is nil: the instance's default applies, Refresher.Pacing).
type Source interface {
	Snapshot(ctx context.Context) (version int64, popups []popup.Popup, team popup.Team, err error)
}

// Backoff spaces the retries of the first load (backoff.Backoff).
type Backoff interface {
	Delay(attempt int) time.Duration
}

// Warm copies the configs from src into the cache (unless it holds a newer version) and
// announces the version. It returns the version the cache holds afterwards.
func Warm(ctx context.Context, src Source, cache Publisher) (int64, error) {
	version, popups, team, err := src.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return cache.Publish(ctx, version, popups, team)
}

// Refresher keeps a Holder current: an announcement or a version poll triggers a reload; an empty
// cache is warmed from the source; on any failure the last snapshot keeps serving. Before the
// first snapshot it retries on Backoff, from the cache or the source, whichever answers first.
type Refresher struct {
	Cache   Cache
	Source  Source
	Holder  *Holder
	Poll    time.Duration
	Backoff Backoff
	Log     *slog.Logger
	Now     func() time.Time
	// OnSwap, when set, is told of every published snapshot (metrics).
	OnSwap func(*Snapshot)
	// Subscribed, when set, is closed once the first snapshot is loaded and the subscription is
	// confirmed (or failed), so that an instance reports itself serving only when it will hear
	// about the next change.
	Subscribed chan struct{}
	// Links is the POPUP_LINK_SCHEMES allow-list: a stored popup whose links it refuses is left
	// out of the snapshot. The zero value allows http and https.
	Links popup.LinkSchemes
	// Pacing is the pacing of a config version the team set none for: POPUP_USER_DAILY_CAP, no
	// gap (docs/CONTRACT.md §13).
	Pacing popup.Pacing
	// Audiences, when set, holds the audience sets the snapshots are built on: every install
	// tells it which audiences the popups target (and so has it check their versions), and
	// Rebuild, which it calls with each new generation of sets, rebuilds the snapshot on them.
	Audiences *AudienceLoader

	kickOnce sync.Once
	kick     chan struct{}
	// mu orders installs; last is the config the newest install built.
	mu   sync.Mutex
	last struct {
		version int64
		popups  []popup.Popup
		team    popup.Team
		set     bool
	}
}

// Kick asks a running refresher to try again now (a dependency came back).
func (r *Refresher) Kick() {
	select {
	case r.kicks() <- struct{}{}:
	default:
	}
}

func (r *Refresher) kicks() chan struct{} {
	r.kickOnce.Do(func() { r.kick = make(chan struct{}, 1) })
	return r.kick
}

// Refresh brings the holder up to the newest config: from the cache, warming the cache from the
// source when it is empty, and straight from the source when the cache is unreachable and there
// is no snapshot yet.
func (r *Refresher) Refresh(ctx context.Context) error {
	cur := r.Holder.Load()
	if cur != nil {
		v, found, err := r.Cache.Version(ctx)
		if err != nil {
			return err
		}
		if found && v <= cur.Version {
			return nil
		}
	}
	version, popups, team, found, err := r.Cache.Load(ctx)
	if err == nil && !found {
		if _, werr := Warm(ctx, r.Source, r.Cache); werr != nil {
			err = fmt.Errorf("warm empty config cache: %w", werr)
		} else {
			version, popups, team, found, err = r.Cache.Load(ctx)
			if err == nil && !found {
				err = errors.New("config cache empty right after warming it")
			}
		}
	}
	if err != nil {
		if cur != nil {
			return err
		}
		// No snapshot at all yet and the cache cannot give one: serve the source's.
		var serr error
		version, popups, team, serr = r.Source.Snapshot(ctx)
		if serr != nil {
			return errors.Join(err, serr)
		}
	}
	r.install(version, popups, team)
	return nil
}

// Reload publishes the source's configs to the cache (and so to every instance) and serves them
// here, returning the version now served. When the cache took them, this instance builds its
// snapshot from the configs it just read instead of loading the same blob back from the cache;
// when the cache already held a newer version, it refreshes from the cache as usual.
func (r *Refresher) Reload(ctx context.Context) (int64, error) {
	version, popups, team, err := r.Source.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	held, err := r.Cache.Publish(ctx, version, popups, team)
	if err != nil {
		return 0, err
	}
	if held == version {
		r.install(version, popups, team)
	} else if err := r.Refresh(ctx); err != nil {
		return 0, err
	}
	return r.Holder.Load().Version, nil
}

// install builds the snapshot of (version, popups, team) on the audience sets held and
// publishes it to the holder unless a newer one is there already; then it tells the audience
// loader what the popups target.
func (r *Refresher) install(version int64, popups []popup.Popup, team popup.Team) {
	r.mu.Lock()
	if !r.last.set || version >= r.last.version {
		r.last.version, r.last.popups, r.last.team, r.last.set = version, popups, team, true
	}
	r.build(version, popups, team, true)
	r.mu.Unlock()
	if r.Audiences != nil {
		r.Audiences.Want(AudienceIDs(popups))
	}
}

// Rebuild builds the newest installed config again on the audience sets held now (the loader's
// OnChange).
func (r *Refresher) Rebuild() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.set {
		r.build(r.last.version, r.last.popups, r.last.team, false)
	}
}

// build publishes the snapshot of (version, popups, team) on the sets held; r.mu is held.
// Problems are logged for a new config only, not again for each new generation of audience sets.
func (r *Refresher) build(version int64, popups []popup.Popup, team popup.Team, logProblems bool) {
	var sets *audience.Sets
	if r.Audiences != nil {
		sets = r.Audiences.Sets()
	}
	s := BuildWith(version, popups, r.Now(), r.Links, sets)
	s.Pacing = r.Pacing
	if team.Pacing != nil {
		s.Pacing = *team.Pacing
	}
	s.SetHoldout(team.Holdout)
	if logProblems {
		for _, p := range s.Problems {
			r.Log.Warn("popup left out of snapshot", "err", p)
		}
	}
	if r.Holder.Store(s) && r.OnSwap != nil {
		r.OnSwap(s)
	}
}

// Run loads the first snapshot (retrying on Backoff, or at once when kicked, until it has one),
// subscribes to the announcements, then refreshes on every announcement, every Poll and every
// Kick until ctx ends. It returns nil when ctx ends.
func (r *Refresher) Run(ctx context.Context) error {
	kick := r.kicks()
	var lastErr string
	refresh := func() {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.Refresh(rctx)
		cancel()
		// Log a failure once, not every attempt, and say when it heals.
		switch {
		case err != nil && ctx.Err() == nil && err.Error() != lastErr:
			if r.Holder.Load() == nil {
				r.Log.Warn("no config snapshot yet (not ready); retrying", "err", err)
			} else {
				r.Log.Warn("config refresh failed; serving the last snapshot", "err", err)
			}
			lastErr = err.Error()
		case err == nil && lastErr != "":
			r.Log.Info("config refresh recovered")
			lastErr = ""
		}
	}
	for attempt := 0; r.Holder.Load() == nil; attempt++ {
		refresh()
		if r.Holder.Load() != nil {
			break
		}
		t := time.NewTimer(r.Backoff.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-kick:
			t.Stop()
		case <-t.C:
		}
	}
	msgs, err := r.Cache.Subscribe(ctx, 2*time.Second)
	if err != nil && ctx.Err() == nil {
		r.Log.Warn("config subscription not confirmed; relying on the poll until it is", "err", err)
	}
	if r.Subscribed != nil {
		close(r.Subscribed)
	}
	// A change announced while the first load ran or before the subscription was confirmed.
	refresh()
	tick := time.NewTicker(r.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-msgs:
		case <-tick.C:
		case <-kick:
		}
		refresh()
	}
}
