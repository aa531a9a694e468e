// Package status is the admin slice of the operator's view of the service's health
// (docs/CONTRACT.md §16): what the alert rules in deploy/prometheus watch, read from the
// stores and this instance's state, for an operator without Prometheus.
package status

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
)

// readLimit bounds the whole status read: a dependency that does not answer within it is
// reported as unavailable, never waited for.
const readLimit = 2 * time.Second

// The thresholds of the alert rules (deploy/prometheus/popup-alerts.yml) a section's warning
// follows, so that the page and the alerts agree on what needs an operator.
const (
	// BacklogAgeLimit is PopupQueueBacklogOld's: the oldest queued event waits longer.
	BacklogAgeLimit = 2 * time.Minute
	// ErasurePromise is the contract's bound on an erasure (PopupErasureOverdue).
	ErasurePromise = time.Minute
	// RetentionSlack is PopupRetentionStalled's: a day past the retention still kept this long
	// after it should have gone means no worker runs the retention through.
	RetentionSlack = 2 * time.Hour
)

// The states of a section.
const (
	StateOK          = "ok"          // nothing to do
	StateWarning     = "warning"     // what an alert rule watches is past its threshold
	StateDown        = "down"        // the dependency's last check failed
	StateUnchecked   = "unchecked"   // not checked yet (the instance is starting)
	StateUnavailable = "unavailable" // its store could not be read within the limit
	StateOff         = "off"         // not in use here (say, Redis is not a cluster)
)

// API serves the status.
type API struct {
	*httpapi.Shared
	Ports
}

// Ports are what the status reads; each is the store or the watcher that already serves the
// feature (a nil one reports its section unavailable).
type Ports struct {
	MySQL, Redis Dependency
	// Ready is this instance's readiness (httpapi.Public.Ready: the /readyz rule).
	Ready func() bool
	// ConfigVersion is the version of the config snapshot served (0: none loaded).
	ConfigVersion func() int64
	Queue         Queue
	Retention     Retention
	// LogRetention is POPUP_ACTION_LOG_RETENTION.
	LogRetention time.Duration
	Audiences    Audiences
	Erasures     Erasures
	// Coverage is nil unless Redis is a cluster.
	Coverage Coverage
}

// Dependency is a dependency's background check (health.Dep).
type Dependency interface {
	Up() bool
	Down() bool
}

// Backlog is the event queue over its shards.
type Backlog struct {
	Waiting    int64     // events queued, not claimed
	Processing int64     // claimed by a worker, not acknowledged
	Dead       int64     // in the dead-letter lists
	OldestAt   time.Time // event time of the oldest queued event; zero when none
}

// Queue reads the event queue's backlog (redisstore.Queue, every shard).
type Queue interface {
	Backlog(ctx context.Context) (Backlog, error)
}

// Retention reads the first and the last day the action log has a partition for
// (mysqlstore.LogPartitions.Days); zero when it has none.
type Retention interface {
	Days(ctx context.Context) (first, last time.Time, err error)
}

// Audiences is this instance's audience sets: how many are held and the active popups answering
// fail-closed because one they target is not.
type Audiences interface {
	Held() int
	FailClosed() []int64
}

// Erasures counts the pending erasures and when the oldest was requested (mysqlstore.PrivacyRepo).
type Erasures interface {
	Pending(ctx context.Context) (n int, oldest time.Time, err error)
}

// Coverage is the last check of the Redis Cluster's coverage setting (redisstore.CoverageCheck):
// the nodes with cluster-require-full-coverage yes, when, and why it could not be read.
type Coverage interface {
	Last() (fullCoverage []string, at time.Time, err error)
}

// Register adds the status route: reading it is for every operator.
func (a *API) Register(g *gin.RouterGroup) {
	g.GET("/status", a.getStatus)
}

func (a *API) getStatus(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), readLimit)
	defer cancel()
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, a.read(ctx, a.Now()))
}

// read is the status at now. Its stores are read at once, each within ctx; one that fails or
// does not answer in time is its section's state, never the whole answer's.
func (a *API) read(ctx context.Context, now time.Time) statusWire {
	s := statusWire{CheckedAt: now.UTC(), MySQL: depOf(a.MySQL), Redis: depOf(a.Redis)}
	var wg sync.WaitGroup
	wg.Go(func() { s.Queue = a.queue(ctx, now) })
	wg.Go(func() { s.Retention = a.retention(ctx, now) })
	wg.Go(func() { s.Erasures = a.erasures(ctx, now) })
	s.Instance = a.instance()
	s.Audiences = a.audiences()
	s.RedisCluster = a.coverage()
	wg.Wait()
	s.State = StateOK
	for _, st := range []string{s.MySQL.State, s.Redis.State, s.Instance.State, s.Queue.State, s.Retention.State,
		s.Audiences.State, s.Erasures.State, s.RedisCluster.State} {
		if st != StateOK && st != StateOff {
			s.State = StateWarning
		}
	}
	return s
}

func depOf(d Dependency) depWire {
	switch {
	case d == nil:
		return depWire{State: StateUnchecked}
	case d.Up():
		return depWire{State: StateOK}
	case d.Down():
		return depWire{State: StateDown}
	}
	return depWire{State: StateUnchecked}
}

func (a *API) instance() instanceWire {
	in := instanceWire{State: StateWarning}
	if a.Ready != nil && a.Ready() {
		in.Ready, in.State = true, StateOK
	}
	if a.ConfigVersion != nil {
		in.ConfigVersion = a.ConfigVersion()
	}
	return in
}

// unavailable is a section's state when its store failed: down when the dependency is known
// down, unavailable otherwise (slow, or failing in another way).
func unavailable(d Dependency) string {
	if d != nil && d.Down() {
		return StateDown
	}
	return StateUnavailable
}

func (a *API) queue(ctx context.Context, now time.Time) queueWire {
	q := queueWire{State: StateUnavailable, LimitSeconds: BacklogAgeLimit.Seconds()}
	switch {
	case a.Queue == nil:
		return q
	case a.Redis != nil && a.Redis.Down():
		q.State, q.Error = StateDown, "Redis is down"
		return q
	}
	b, err := a.Queue.Backlog(ctx)
	if err != nil {
		q.State, q.Error = unavailable(a.Redis), errText(ctx, err)
		return q
	}
	q.State, q.Waiting, q.Processing, q.DeadLetters = StateOK, b.Waiting, b.Processing, b.Dead
	if !b.OldestAt.IsZero() {
		q.OldestAgeSeconds = seconds(now.Sub(b.OldestAt))
	}
	if q.OldestAgeSeconds > BacklogAgeLimit.Seconds() || q.DeadLetters > 0 {
		q.State = StateWarning
	}
	return q
}

func (a *API) retention(ctx context.Context, now time.Time) retentionWire {
	r := retentionWire{KeepDays: int(a.LogRetention / (24 * time.Hour))}
	if a.Retention == nil {
		r.State = StateUnavailable
		return r
	}
	first, last, err := a.Retention.Days(ctx)
	if err != nil {
		r.State, r.Error = unavailable(a.MySQL), errText(ctx, err)
		return r
	}
	r.State = StateOK
	if first.IsZero() {
		return r
	}
	r.OldestDay, r.NewestDay = first.UTC().Format(time.DateOnly), last.UTC().Format(time.DateOnly)
	today := now.UTC().Truncate(24 * time.Hour)
	r.DaysKept = max(int(today.Sub(first.UTC().Truncate(24*time.Hour))/(24*time.Hour))+1, 0)
	// A day is dropped once the whole of it is past the retention: the first day kept should be
	// the cutoff's day or later, within the slack the alert allows the runs.
	r.Overdue = first.Before(now.Add(-a.LogRetention - RetentionSlack).UTC().Truncate(24 * time.Hour))
	// Events of a day without its partition land in pmax, which the retention never drops.
	r.DaysAheadMissing = last.Before(today)
	if r.Overdue || r.DaysAheadMissing {
		r.State = StateWarning
	}
	return r
}

func (a *API) erasures(ctx context.Context, now time.Time) erasuresWire {
	e := erasuresWire{PromiseSeconds: ErasurePromise.Seconds()}
	if a.Erasures == nil {
		e.State = StateUnavailable
		return e
	}
	n, oldest, err := a.Erasures.Pending(ctx)
	if err != nil {
		e.State, e.Error = unavailable(a.MySQL), errText(ctx, err)
		return e
	}
	e.State, e.Pending = StateOK, n
	if n > 0 && !oldest.IsZero() {
		e.OldestAgeSeconds = seconds(now.Sub(oldest))
		if now.Sub(oldest) > ErasurePromise {
			e.State, e.Overdue = StateWarning, true
		}
	}
	return e
}

func (a *API) audiences() audiencesWire {
	if a.Audiences == nil {
		return audiencesWire{State: StateUnavailable, FailClosedPopups: []int64{}}
	}
	au := audiencesWire{State: StateOK, Held: a.Audiences.Held(), FailClosedPopups: a.Audiences.FailClosed()}
	if au.FailClosedPopups == nil {
		au.FailClosedPopups = []int64{}
	}
	if len(au.FailClosedPopups) > 0 {
		au.State = StateWarning
	}
	return au
}

func (a *API) coverage() clusterWire {
	if a.Coverage == nil {
		return clusterWire{State: StateOff, FullCoverageNodes: []string{}}
	}
	nodes, at, err := a.Coverage.Last()
	cl := clusterWire{State: StateOK, FullCoverageNodes: nodes}
	if !at.IsZero() {
		t := at.UTC()
		cl.CheckedAt = &t
	}
	if cl.FullCoverageNodes == nil {
		cl.FullCoverageNodes = []string{}
	}
	switch {
	case err != nil:
		cl.State, cl.Error = StateUnavailable, err.Error()
	case at.IsZero():
		cl.State = StateUnchecked
	case len(nodes) > 0:
		cl.State = StateWarning
	}
	return cl
}

// errText is a failed read in a few words: the limit's when the read ran out of time.
func errText(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "no answer within " + readLimit.String()
	}
	return err.Error()
}

func seconds(d time.Duration) float64 {
	return max(d, 0).Round(time.Millisecond).Seconds()
}
