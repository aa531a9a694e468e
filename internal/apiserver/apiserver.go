// Package apiserver wires popup-api together from its config: stores, snapshot refresher,
// dependency checks, public and admin listeners. cmd/popup-api and the end-to-end tests both run
// it.
//
// popup-api starts whatever state MySQL and Redis are in and heals by itself: it serves as soon as
// it has a config snapshot, from the Redis cache or from MySQL, and until then keeps trying both
// (capped exponential backoff with jitter) with /healthz 200 and /readyz 503. MySQL's schema is
// checked once MySQL answers; an unmigrated or newer schema stops the process (Run returns
// mysqlstore.ErrSchema), as does a bad config; nothing else does.
package apiserver

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/changelog"
	"popupsvc/internal/config"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/manage"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
	"popupsvc/internal/popuplist"
)

// Hooks let a caller observe the running server (tests bind to port 0).
type Hooks struct {
	// OnListen is called once both listeners are bound, ready or not (/healthz answers).
	OnListen func(public, admin net.Addr)
	// OnReady is called once the listeners are bound and the server is ready: the first config
	// snapshot is loaded and the config subscription confirmed (or given up on).
	OnReady func(public, admin net.Addr)
	Now     func() time.Time
}

// Breaker settings (one breaker per queue shard): consecutive Redis failures that open it, and
// how long it stays open before a probe. Together with POPUP_REDIS_TIMEOUT they bound a degraded
// answer's latency. A probe costs one request's degraded answer at most, so it comes often: a
// promoted replica is found within a cooldown of the clients following it (docs/RELIABILITY.md).
const (
	breakerThreshold = 5
	breakerCooldown  = 250 * time.Millisecond
)

// Dependency checks: how often while the dependency is up, and how long one check may take.
const (
	// audiencePoll is how often the audience loader checks its audiences' versions when no
	// config change told it to (a change is announced with the config, within a second).
	audiencePoll    = 5 * time.Second
	depCheckEvery   = 5 * time.Second
	mysqlCheckLimit = 10 * time.Second
	redisCheckLimit = time.Second
)

// Run serves until ctx ends, then shuts down gracefully: each step wires a part of the server
// from the parts before it.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, hooks Hooks) error {
	ops, err := adminOperators(cfg)
	if err != nil {
		return err
	}
	s := &server{cfg: cfg, log: log, now: hooks.Now, reg: prometheus.NewRegistry(), ops: ops}
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	defer s.close()
	steps := []func() error{s.stores, s.snapshots, s.userStates, s.decisions, s.publicAPI}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	// The instance reports ready once the audiences its active popups target are loaded, or
	// POPUP_AUDIENCE_LOAD_TIMEOUT after its first snapshot.
	s.public.AudiencesSettled = settleAudiences(ctx, s.holder, cfg.AudienceLoadTimeout, log)
	adminRouter, err := s.adminAPI(ops)
	if err != nil {
		return err
	}
	return s.serve(ctx, adminRouter, hooks)
}

// adminOperators is every operator of the admin API, each with its role: POPUP_ADMIN_TOKENS,
// POPUP_ADMIN_TOKENS_FILE and POPUP_ADMIN_TOKEN (the operator "admin", role admin). None at all
// is httpapi.ErrNoToken.
func adminOperators(cfg config.Config) ([]operator.Operator, error) {
	ops, err := cfg.Operators()
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, httpapi.ErrNoToken
	}
	return ops, nil
}

// recordOperators records in the audit log how the operators this start has differ from the
// last start's (mysqlstore.OperatorLog).
func (s *server) recordOperators(ctx context.Context) error {
	return mysqlstore.NewOperatorLog(s.db).Sync(ctx, s.ops, s.now())
}

// mysqlCheck pings MySQL and, the first time it answers, checks the schema (an unmigrated or
// newer schema is fatal: mysqlstore.ErrSchema), runs firstUp (until it succeeds) and prewarms the
// pool. Only the check's own goroutine calls it.
func mysqlCheck(db *sql.DB, maxOpen int, firstUp func(context.Context) error) func(context.Context) error {
	schemaOK := false
	return func(ctx context.Context) error {
		ctx = mysqlstore.Ungated(ctx) // the check is what finds MySQL back: the gate would refuse it
		if err := db.PingContext(ctx); err != nil {
			return fmt.Errorf("ping MySQL: %w", err)
		}
		if schemaOK {
			return nil
		}
		if err := mysqlstore.CheckSchema(ctx, db); err != nil {
			return err
		}
		if err := firstUp(ctx); err != nil {
			return err
		}
		schemaOK = true
		mysqlstore.Prewarm(ctx, db, min(maxOpen, 8))
		return nil
	}
}

// popupStore is the admin API's popup store (popups.PopupRepo): the write use case and the
// repository's reads.
type popupStore struct {
	*manage.Service
	popupReads
}

// popupReads are the popup repository's reads the admin API makes.
type popupReads interface {
	List(ctx context.Context, includeArchived bool) ([]popup.Popup, error)
	Find(ctx context.Context, q popuplist.Query) (popuplist.Page, error)
	Get(ctx context.Context, id int64) (popup.Popup, error)
	History(ctx context.Context, id int64) ([]popup.Revision, error)
	Audit(ctx context.Context, q changelog.AuditQuery) ([]changelog.AuditEntry, error)
}

// holdoutReads are the holdout's results' reads (results.HoldoutReads): its phases from the
// settings, a cohort's goal counts from the stats.
type holdoutReads struct {
	*mysqlstore.SettingsRepo
	*mysqlstore.StatsRepo
}
