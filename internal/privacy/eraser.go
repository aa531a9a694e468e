package privacy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"popupsvc/internal/backoff"
	"popupsvc/internal/popup"
)

// Store is the durable side of erasures (mysqlstore.PrivacyRepo): the requests and their status,
// the tombstones, and the deletes of the uid's rows.
type Store interface {
	// Request records a pending erasure, or returns the id of one already pending for the same
	// uid hash (asking twice erases once).
	Request(ctx context.Context, r Request) (string, error)
	// Erasure reads one (ErrNotFound).
	Erasure(ctx context.Context, id string) (Erasure, error)
	// Claim takes the oldest pending erasure whose lease has run out (or that never had one) for
	// owner until now+lease; ok false when there is none.
	Claim(ctx context.Context, owner string, now time.Time, lease time.Duration) (job Job, ok bool, err error)
	// Tombstone makes the uid's tombstone drop every event of it, after every batch being written
	// has committed (the barrier), until SetCutoff.
	Tombstone(ctx context.Context, uidHash string, expires time.Time) error
	SetCutoff(ctx context.Context, uidHash string, cutoff, expires time.Time) error
	// The deletes, each returning what it removed.
	DeleteUserState(ctx context.Context, uid string) (int64, error)
	DeleteActions(ctx context.Context, uid string) (int64, error)
	DeleteExperimentUser(ctx context.Context, uid string) (int64, error)
	// AudiencesNaming returns the audiences whose stored uploads name uid; ScrubAudienceUploads
	// cuts uid out of every stored upload row and returns how many rows it rewrote.
	AudiencesNaming(ctx context.Context, uid string) ([]int64, error)
	ScrubAudienceUploads(ctx context.Context, uid string) (int64, error)
	// Finish marks the erasure done with what it removed, forgetting the sealed uid.
	Finish(ctx context.Context, id string, removed map[string]int64, at time.Time) error
	// PurgeTombstones removes the tombstones that expired before now.
	PurgeTombstones(ctx context.Context, now time.Time) (int64, error)
}

// Request is a new erasure as the store records it: never the uid in clear.
type Request struct {
	ID      string
	UIDHash string
	Sealed  []byte
	At      time.Time
	Actor   popup.Actor
}

// Job is a claimed erasure.
type Job struct {
	ID      string
	UIDHash string
	Sealed  []byte
}

// Cache is the Redis side of an erasure (redisstore.Eraser).
type Cache interface {
	// EraseState deletes the uid's state, action rate counter and reservation.
	EraseState(ctx context.Context, uid string) (int64, error)
	// ReplaceMarkers replaces each of the uid's event-id markers by one named hash(event id),
	// with the marker's remaining life.
	ReplaceMarkers(ctx context.Context, uid string, hash func(eventID string) string) (int64, error)
	// PurgeQueued removes the uid's events from its shard's queue and dead-letter list.
	PurgeQueued(ctx context.Context, uid string) (int64, error)
	// Holding reports whether a worker's processing list still holds an event of the uid.
	Holding(ctx context.Context, uid string) (bool, error)
}

// AudienceMembers removes a uid from an audience: a new version without it (manage.Audiences).
type AudienceMembers interface {
	WriteMembers(ctx context.Context, actor popup.Actor, id int64, action popup.AudienceAction, ifVersion []int64, src popup.MemberLines) (popup.MemberWrite, error)
}

// ErasureActor is who the history of an audience names for a version an erasure made.
var ErasureActor = popup.Actor{Name: "(erasure)", Role: popup.RoleAdmin}

// Eraser is the erasure use case. popup-api's admin listener records requests (Request) and
// reads their status; every popup-worker runs the pending ones (Run), so an erasure completes
// whichever instance accepted it, and one a dying worker left is taken over when its lease runs
// out.
type Eraser struct {
	Store     Store
	Cache     Cache           // the worker's; nil on popup-api
	Audiences AudienceMembers // the worker's; nil on popup-api
	Keyed     *Keyed          // nil: POPUP_PRIVACY_KEY unset, erasures are off
	Now       func() time.Time
	Log       *slog.Logger
	Owner     string        // this worker's id
	Lease     time.Duration // how long a claimed erasure is this worker's
	Poll      time.Duration // how often the worker looks for pending erasures
	// Settle is how long a load of the user's state from MySQL that began before its rows were
	// deleted may still write them back to Redis (redisstore.StateLoadTimeout): the Redis step
	// waits that long after the MySQL deletes.
	Settle time.Duration
	// Drained bounds the wait for the worker batches in hand that hold the uid's events.
	Drained time.Duration
}

// Request records an erasure of uid asked by actor and returns its id; ErrNotConfigured without
// a key. The uid is validated by the caller.
func (e *Eraser) Request(ctx context.Context, actor popup.Actor, uid string) (string, error) {
	if e.Keyed == nil {
		return "", ErrNotConfigured
	}
	if err := actor.Need(popup.RoleAdmin, "erasing a user"); err != nil {
		return "", err
	}
	id, err := NewID()
	if err != nil {
		return "", err
	}
	sealed, err := e.Keyed.Seal(uid)
	if err != nil {
		return "", err
	}
	id, err = e.Store.Request(ctx, Request{ID: id, UIDHash: e.Keyed.UID(uid), Sealed: sealed, At: e.Now().UTC(), Actor: actor})
	if err != nil {
		return "", fmt.Errorf("request erasure: %w", err)
	}
	return id, nil
}

// Status reads erasure id.
func (e *Eraser) Status(ctx context.Context, id string) (Erasure, error) {
	return e.Store.Erasure(ctx, id)
}

// Run erases the pending requests until ctx ends, and removes expired tombstones; a failed
// erasure is logged and tried again once its lease has run out.
func (e *Eraser) Run(ctx context.Context) error {
	t := time.NewTicker(e.Poll)
	defer t.Stop()
	lastPurge := time.Time{}
	for {
		for ctx.Err() == nil {
			did, err := e.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				e.Log.Warn("erasure failed; it is tried again when its lease runs out", "err", err)
			}
			if !did || err != nil {
				break
			}
		}
		if now := e.Now(); now.Sub(lastPurge) >= time.Minute {
			if _, err := e.Store.PurgeTombstones(ctx, now); err != nil && ctx.Err() == nil {
				e.Log.Warn("purge tombstones", "err", err)
			}
			lastPurge = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce claims one pending erasure and runs it; false when there was none.
func (e *Eraser) RunOnce(ctx context.Context) (bool, error) {
	if e.Keyed == nil {
		return false, nil
	}
	job, ok, err := e.Store.Claim(ctx, e.Owner, e.Now().UTC(), e.Lease)
	if err != nil || !ok {
		return false, err
	}
	// The erasure's own deadline: past its lease another worker may take it over.
	jctx, cancel := context.WithTimeout(ctx, e.Lease)
	defer cancel()
	start := time.Now()
	removed, err := e.erase(jctx, job)
	if err != nil {
		return true, fmt.Errorf("erasure %s: %w", job.ID, err)
	}
	if err := e.Store.Finish(ctx, job.ID, removed, e.Now().UTC()); err != nil {
		return true, fmt.Errorf("erasure %s: %w", job.ID, err)
	}
	// The id and counts only: never the uid, nor its hash beside a time an operator could match.
	e.Log.Info("erasure done", "erasure_id", job.ID, "took", time.Since(start).Round(time.Millisecond), "removed", removed)
	return true, nil
}

// erase runs every step of one erasure; each is idempotent, so a job taken over after a crash
// runs them all again.
//
// The order is what keeps the uid from coming back: the tombstone first (from then on no batch
// writes the uid's events), then MySQL (the user state first: a Redis miss reloads from it), then,
// once a load that began before those deletes cannot be caching its result any more (Settle),
// Redis; then the cut-off, which lets the uid's new visits be written again; then the wait for the
// batches workers hold, which drop the uid's events.
func (e *Eraser) erase(ctx context.Context, job Job) (map[string]int64, error) {
	uid, err := e.Keyed.Open(job.Sealed)
	if err != nil {
		return nil, err
	}
	if e.Keyed.UID(uid) != job.UIDHash {
		return nil, errors.New("sealed uid does not match its hash")
	}
	removed := map[string]int64{}
	if err := e.Store.Tombstone(ctx, job.UIDHash, e.Now().Add(2*Window)); err != nil {
		return nil, fmt.Errorf("tombstone: %w", err)
	}
	steps := []struct {
		store string
		run   func(context.Context, string) (int64, error)
	}{
		{StoreUserState, e.Store.DeleteUserState},
		{StoreActionLog, e.Store.DeleteActions},
		{StoreExperimentUser, e.Store.DeleteExperimentUser},
		{StoreAudiences, e.leaveAudiences},
		{StoreAudienceUploads, e.Store.ScrubAudienceUploads},
	}
	var settled time.Time
	for i, s := range steps {
		n, err := s.run(ctx, uid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.store, err)
		}
		removed[s.store] = n
		if i == 0 {
			// The state rows are gone: from the end of Settle on, no load can bring them back.
			settled = time.Now().Add(e.Settle)
		}
	}
	if !backoff.Wait(ctx, time.Until(settled)) {
		return nil, ctx.Err()
	}
	return e.eraseCache(ctx, job, uid, removed)
}

// eraseCache is erase's Redis part and what follows it (see erase).
func (e *Eraser) eraseCache(ctx context.Context, job Job, uid string, removed map[string]int64) (map[string]int64, error) {
	cacheSteps := []struct {
		store string
		run   func(context.Context, string) (int64, error)
	}{
		{StoreRedisState, e.Cache.EraseState},
		{StoreRedisMarkers, func(ctx context.Context, uid string) (int64, error) {
			return e.Cache.ReplaceMarkers(ctx, uid, func(id string) string { return e.Keyed.Event(uid, id) })
		}},
		{StoreRedisQueue, e.Cache.PurgeQueued},
	}
	for _, s := range cacheSteps {
		n, err := s.run(ctx, uid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.store, err)
		}
		removed[s.store] += n
	}
	cutoff := e.Now().Add(ClockSkew).UTC()
	if err := e.Store.SetCutoff(ctx, job.UIDHash, cutoff, cutoff.Add(Window)); err != nil {
		return nil, fmt.Errorf("tombstone cut-off: %w", err)
	}
	// Batches in workers' hands drop the uid's events; one a dead worker held goes back to the
	// queue when its lease runs out, so the queue is purged again until neither holds any.
	deadline := time.Now().Add(e.Drained)
	for {
		holding, err := e.Cache.Holding(ctx, uid)
		if err != nil {
			return nil, fmt.Errorf("processing lists: %w", err)
		}
		n, err := e.Cache.PurgeQueued(ctx, uid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", StoreRedisQueue, err)
		}
		removed[StoreRedisQueue] += n
		if !holding && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.New("workers still hold events of the user; tried again later")
		}
		if !backoff.Wait(ctx, 100*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
	// Done says a new visit of the uid is written again: not before the cut-off.
	if !backoff.Wait(ctx, cutoff.Sub(e.Now())) {
		return nil, ctx.Err()
	}
	return removed, nil
}

// leaveAudiences removes uid from every audience whose uploads name it, each removal a new
// version (the member-write path, audited as ErasureActor); it returns how many audiences held
// the uid as a member.
func (e *Eraser) leaveAudiences(ctx context.Context, uid string) (int64, error) {
	ids, err := e.Store.AudiencesNaming(ctx, uid)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, id := range ids {
		w, err := e.Audiences.WriteMembers(ctx, ErasureActor, id, popup.AudienceRemove, nil, &oneLine{uid: []byte(uid)})
		if errors.Is(err, popup.ErrAudienceNotFound) {
			continue // deleted meanwhile: its rows went with it
		}
		if err != nil {
			return n, err
		}
		n += w.Removed
	}
	return n, nil
}

// oneLine is an upload of one uid.
type oneLine struct {
	uid  []byte
	read bool
}

func (o *oneLine) Next() ([]byte, int, error) {
	if o.read {
		return nil, 0, io.EOF
	}
	o.read = true
	return o.uid, 1, nil
}
