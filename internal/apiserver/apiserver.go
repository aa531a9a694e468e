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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"popupsvc/internal/audience"
	"popupsvc/internal/breaker"
	"popupsvc/internal/coalesce"
	"popupsvc/internal/config"
	"popupsvc/internal/decide"
	"popupsvc/internal/health"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/manage"
	"popupsvc/internal/memlimit"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/uidauth"
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

// Run serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, hooks Hooks) error {
	ops, err := adminOperators(cfg)
	if err != nil {
		return err
	}
	now := hooks.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	db, err := mysqlstore.NewPool(cfg.MySQLDSN, cfg.MySQLMaxOpen)
	if err != nil {
		return err
	}
	defer db.Close()
	rdb, err := redisstore.NewClient(cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := httpapi.NewMetrics(reg)
	depUp := health.NewUpGauge(reg)

	mysqlDep := &health.Dep{Name: "mysql", Every: depCheckEvery, Timeout: mysqlCheckLimit, Backoff: health.DefaultBackoff,
		Log: log, Gauge: depUp, Check: mysqlCheck(db, cfg.MySQLMaxOpen),
		Fatal: func(err error) bool { return errors.Is(err, mysqlstore.ErrSchema) }}
	redisDep := &health.Dep{Name: "redis", Every: depCheckEvery, Timeout: redisCheckLimit, Backoff: health.DefaultBackoff,
		Log: log, Gauge: depUp, Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}
	popups := mysqlstore.NewPopupRepo(db)
	reads := &gatedReads{repo: popups, dep: mysqlDep}
	// The writes run the use case over the same gate, at its one seam (the transaction); an
	// experiment's phase starts on the server's clock.
	writes := manage.New(gatedStore{store: manage.TxFunc[*mysqlstore.Tx](popups.InTx), dep: mysqlDep}, now)
	// The config cache moves the whole config (megabytes at 10,000 popups) and its reloads run off
	// the hot path: they get their own client with the worker's one-second floor instead of the
	// hot path's 50 ms timeout, so a loaded machine does not turn an admin write's propagation
	// (or a snapshot reload) into a timeout.
	ccfg := cfg
	ccfg.RedisTimeout = max(cfg.RedisTimeout, time.Second)
	ccfg.RedisPoolSize = 4
	cfgRDB, err := redisstore.NewClient(ccfg)
	if err != nil {
		return err
	}
	defer cfgRDB.Close()
	cache := redisstore.NewConfigCache(cfgRDB, keys)

	holder := &snapshot.Holder{}
	subscribed := make(chan struct{})
	refresher := &snapshot.Refresher{Cache: cache, Source: reads, Holder: holder, Poll: cfg.ConfigPoll, Links: cfg.Links(),
		Pacing:  cfg.DefaultPacing(),
		Backoff: health.DefaultBackoff, Log: log, Now: now, Subscribed: subscribed,
		OnSwap: func(s *snapshot.Snapshot) {
			metrics.Version.Set(float64(s.Version))
			metrics.BuiltAt.Set(float64(s.BuiltAt.UnixNano()) / 1e9)
			log.Info("config snapshot swapped", "version", s.Version, "active", len(s.Ordered))
		}}
	// The audience sets the snapshots are built on: the loader follows the config (every install
	// tells it what the popups target) and each new generation of sets rebuilds the snapshot.
	budget := memlimit.New() // the collector's limit follows the audience sets held and loading
	audienceStore := gatedAudienceStore{repo: mysqlstore.NewAudienceRepo(db).OnLoad(budget.Loading), dep: mysqlDep}
	loader := &snapshot.AudienceLoader{Source: audienceStore, Memory: int64(cfg.AudienceMemory), Poll: audiencePoll, Log: log,
		OnChange: func(*audience.Sets) { refresher.Rebuild() }, Budget: budget}
	refresher.Audiences = loader
	held := heldSets{loader: loader, store: audienceStore}
	registerAudienceMetrics(reg, loader, holder)
	// A dependency coming back is the moment a snapshot (or a newer one) can be had.
	mysqlDep.OnUp = func() { refresher.Kick(); loader.Kick() }
	// A Redis Cluster's coverage setting decides the blast radius of a dead master: checked at
	// start and whenever Redis comes back (nil, checking nothing, unless Redis is a cluster).
	coverage := redisstore.NewCoverageCheck(rdb, log, reg)
	redisDep.OnUp = func() { refresher.Kick(); coverage.Kick() }

	var pipe *redisstore.Pipeline
	if cfg.RedisPipelining {
		if pipe, err = redisstore.NewPipeline(rdb); err != nil {
			return fmt.Errorf("redis autopipeline: %w", err)
		}
		// It carries the Redis calls of the requests in flight: it closes (flushing what it
		// holds) only after both listeners have shut down, when Run returns.
		defer pipe.Close() // nothing left to answer
	}
	users := redisstore.NewUserStore(rdb, keys, cfg.UserStateTTL, mysqlstore.NewUserStateLoader(db), cfg.StateLoadLimit, pipe)
	users.SetActionRateLimit(cfg.ActionRateLimit)
	users.RememberRecorded(cfg.RecentStateCacheSize)
	var keyed *privacy.Keyed // nil: POPUP_PRIVACY_KEY unset, erasures are off
	if cfg.PrivacyKey != "" {
		if keyed, err = privacy.NewKeyed(cfg.PrivacyKey); err != nil {
			return fmt.Errorf("POPUP_PRIVACY_KEY: %w", err)
		}
		users.SetErasedMarkers(keyed)
	} else {
		log.Warn("POPUP_PRIVACY_KEY is not set: user erasures are off (DELETE /admin/v1/users/{uid} answers 501)")
	}
	if cfg.RedisAckReplicas > 0 {
		// WAIT blocks its connection for up to an action's budget (four request budgets): these
		// records get a client whose read timeout allows that.
		acfg := cfg
		acfg.RedisTimeout = 4*cfg.RequestBudget + cfg.RedisTimeout
		ackRDB, err := redisstore.NewClient(acfg)
		if err != nil {
			return err
		}
		defer ackRDB.Close()
		users.SetAckReplicas(cfg.RedisAckReplicas, ackRDB)
	}
	var known *redisstore.KnownUsers
	if cfg.KnownUsers > 0 {
		if known, err = redisstore.NewKnownUsers(keys, cfg.KnownUsers, cfg.KnownUsersFP); err != nil {
			return err
		}
	}
	users.UseKnownUsers(known, redisstore.NewStateMetrics(reg))
	local := decide.NewLocalAnswers(cfg.LocalAnswerCacheSize)
	reg.MustRegister(local.Collectors()...)
	goalStore := gatedGoalStore{repo: mysqlstore.NewGoalRepo(db), dep: mysqlDep}
	goals := &goalSet{catalog: redisstore.NewGoalCatalog(cfgRDB, keys), source: goalStore, log: log}
	decider := &decide.Decider{Snapshots: holder, Users: users, Breakers: breaker.NewSet(keys.Shards, breakerThreshold, breakerCooldown, keys.Shard),
		Budget: cfg.RequestBudget, Local: local, Metrics: decide.NewMetrics(reg), Log: log, Conversions: users, Goals: goals, Reservations: users}
	if cfg.RecentStateCacheSize > 0 {
		decider.Recent = users
	}
	// The instance reports ready once the audiences its active popups target are loaded, or
	// POPUP_AUDIENCE_LOAD_TIMEOUT after its first snapshot.
	settled := settleAudiences(ctx, holder, cfg.AudienceLoadTimeout, log)
	ingestKeys := gatedIngestKeys{repo: mysqlstore.NewIngestKeyRepo(db), dep: mysqlDep}
	public := &httpapi.Public{
		Snapshots: holder, Decider: decider, Now: now, Log: log, Metrics: metrics, AudiencesSettled: settled,
		CORS: cfg.CORS(), IngestKeys: ingestKeys,
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "popup_ready",
		Help: "1 while the instance is ready (/readyz's rule but for the drain at shutdown: a config snapshot loaded, the audiences it targets loaded or waited for)."},
		func() float64 {
			if public.Ready() {
				return 1
			}
			return 0
		}))
	if len(cfg.UIDHMACKeys) > 0 {
		if public.UIDAuth, err = uidauth.New(cfg.UIDHMACKeys, cfg.UIDHMACMaxAge); err != nil {
			return fmt.Errorf("POPUP_UID_HMAC_KEYS: %w", err)
		}
		log.Info("uid signatures required", "header", uidauth.Header, "keys", len(cfg.UIDHMACKeys), "max_age", cfg.UIDHMACMaxAge)
	}
	if len(cfg.CORSOrigins) > 0 {
		log.Info("CORS on the public listener", "origins", cfg.CORSOrigins)
	}
	// A reload republishes every config, so concurrent admin writes share one (each still returns
	// only after a reload that began after its commit): a bulk import costs O(n), not O(n²).
	reloads := &coalesce.Group[int64]{Fn: refresher.Reload}
	admin := &httpapi.Admin{Operators: ops, Repo: popupStore{Service: writes, gatedReads: reads}, Users: users, Snapshots: holder,
		Decider: decider, Now: now, Log: log, Gatherer: reg, Registerer: reg, Reload: reloads.Do, Links: cfg.Links()}
	gatedStatsRepo := &gatedStats{stats: mysqlstore.NewStatsRepo(db), dep: mysqlDep}
	admin.Stats, admin.ExperimentDays, admin.ExperimentGoals = gatedStatsRepo, gatedStatsRepo, gatedStatsRepo
	admin.CampaignGoals = gatedStatsRepo
	gatedSettingsRepo := &gatedSettings{settings: mysqlstore.NewSettingsRepo(db), dep: mysqlDep}
	admin.Settings, admin.Holdout = gatedSettingsRepo, holdoutReads{gatedSettingsRepo, gatedStatsRepo}
	admin.DefaultPacing = cfg.DefaultPacing()
	admin.LogRetention = cfg.ActionLogRetention
	admin.Audiences = manage.NewAudiences(audienceStore, held, int64(cfg.AudienceMemory), now)
	admin.AudienceSets = held
	admin.Goals = manage.NewGoals(goalStore, now)
	admin.GoalsChanged = goals.publish
	privacyStore := gatedPrivacy{PrivacyRepo: mysqlstore.NewPrivacyRepo(db), dep: mysqlDep}
	admin.Erasures = &privacy.Eraser{Store: privacyStore, Keyed: keyed, Now: now}
	admin.IngestKeys = ingestKeys
	admin.Exports = &privacy.Exporter{Store: privacyStore, States: users, Audiences: audienceStore, Sets: held, Now: now}
	adminRouter, err := admin.Router()
	if err != nil {
		return err
	}

	publicSrv := httpapi.NewServer(cfg.HTTPAddr, public.Router())
	adminSrv := httpapi.NewServer(cfg.AdminAddr, adminRouter)
	adminSrv.WriteTimeout = 2 * time.Minute // pprof profiles and traces run for a while
	// An import may be 64 MiB: the public listener's 5 s to read a request would cut it off
	// (headers keep their short timeout; slow-header clients are what that one is for).
	adminSrv.ReadTimeout = 2 * time.Minute

	var publicAddr, adminAddr net.Addr
	bound := make(chan struct{}, 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return httpapi.Serve(gctx, publicSrv, cfg.ShutdownTimeout, func(a net.Addr) { publicAddr = a; bound <- struct{}{} })
	})
	g.Go(func() error {
		return httpapi.Serve(gctx, adminSrv, cfg.ShutdownTimeout, func(a net.Addr) { adminAddr = a; bound <- struct{}{} })
	})
	g.Go(func() error { return refresher.Run(gctx) })
	g.Go(func() error { return loader.Run(gctx) })
	g.Go(func() error { return goals.Run(gctx) })
	g.Go(func() error { return mysqlDep.Run(gctx) })
	g.Go(func() error { return redisDep.Run(gctx) })
	g.Go(func() error { return coverage.Run(gctx) })
	g.Go(func() error {
		for _, ch := range []chan struct{}{bound, bound} {
			select {
			case <-ch:
			case <-gctx.Done():
				return nil
			}
		}
		if hooks.OnListen != nil {
			hooks.OnListen(publicAddr, adminAddr)
		}
		for _, ch := range []<-chan struct{}{subscribed, settled} {
			select {
			case <-ch:
			case <-gctx.Done():
				return nil
			}
		}
		log.Info("popup-api serving", "public", publicAddr.String(), "admin", adminAddr.String(), "config_version", holder.Load().Version)
		if hooks.OnReady != nil {
			hooks.OnReady(publicAddr, adminAddr)
		}
		return nil
	})
	err = g.Wait()
	// A reload whose callers left (their requests ended) may still run: it uses the Redis client
	// and the database pool, which close when Run returns.
	reloads.Wait()
	return err
}

// adminOperators is every operator of the admin API, each with its role: POPUP_ADMIN_TOKENS,
// POPUP_ADMIN_TOKENS_FILE and POPUP_ADMIN_TOKEN (the operator "admin", role admin). None at all
// is httpapi.ErrNoToken.
func adminOperators(cfg config.Config) ([]httpapi.Operator, error) {
	named, err := cfg.Operators()
	if err != nil {
		return nil, err
	}
	ops := make([]httpapi.Operator, 0, len(named))
	for _, op := range named {
		ops = append(ops, httpapi.Operator{Name: op.Name, Role: op.Role, Token: op.Token})
	}
	if len(ops) == 0 {
		return nil, httpapi.ErrNoToken
	}
	return ops, nil
}

// mysqlCheck pings MySQL and, the first time it answers, checks the schema (an unmigrated or
// newer schema is fatal: mysqlstore.ErrSchema) and prewarms the pool. Only the check's own
// goroutine calls it.
func mysqlCheck(db *sql.DB, maxOpen int) func(context.Context) error {
	schemaOK := false
	return func(ctx context.Context) error {
		if err := db.PingContext(ctx); err != nil {
			return fmt.Errorf("ping MySQL: %w", err)
		}
		if schemaOK {
			return nil
		}
		if err := mysqlstore.CheckSchema(ctx, db); err != nil {
			return err
		}
		schemaOK = true
		mysqlstore.Prewarm(ctx, db, min(maxOpen, 8))
		return nil
	}
}

// gate runs call unless dep is known down (not before its first check), failing at once with
// httpapi.ErrMySQLUnavailable (the admin API's 503) instead of waiting for a dial timeout, and
// marks dep down when call finds MySQL unreachable. Every MySQL call of the admin API passes
// through it: the writes at their transaction (gatedStore), the reads at gatedReads, stats and
// settings at their wrappers.
func gate[T any](dep *health.Dep, call func() (T, error)) (T, error) {
	var zero T
	if dep.Down() {
		return zero, httpapi.ErrMySQLUnavailable
	}
	v, err := call()
	if mysqlstore.Unavailable(err) {
		dep.Failed()
		return zero, fmt.Errorf("%w: %w", httpapi.ErrMySQLUnavailable, err)
	}
	return v, err
}

// popupStore is the admin API's popup store (httpapi.PopupRepo): the write use case and the
// repository's reads.
type popupStore struct {
	*manage.Service
	*gatedReads
}

// gatedStore is the write use case's store behind the MySQL gate: every popup write runs in one
// transaction, so gating the transaction gates them all.
type gatedStore struct {
	store manage.Store
	dep   *health.Dep
}

func (g gatedStore) InTx(ctx context.Context, fn func(manage.Tx) error) error {
	_, err := gate(g.dep, func() (struct{}, error) { return struct{}{}, g.store.InTx(ctx, fn) })
	return err
}

// gatedReads are the popup repository's reads behind the MySQL gate.
type gatedReads struct {
	repo *mysqlstore.PopupRepo
	dep  *health.Dep
}

func (g *gatedReads) List(ctx context.Context, includeArchived bool) ([]popup.Popup, error) {
	return gate(g.dep, func() ([]popup.Popup, error) { return g.repo.List(ctx, includeArchived) })
}

func (g *gatedReads) Get(ctx context.Context, id int64) (popup.Popup, error) {
	return gate(g.dep, func() (popup.Popup, error) { return g.repo.Get(ctx, id) })
}

func (g *gatedReads) Find(ctx context.Context, q popup.ListQuery) (popup.ListPage, error) {
	return gate(g.dep, func() (popup.ListPage, error) { return g.repo.Find(ctx, q) })
}

func (g *gatedReads) History(ctx context.Context, id int64) ([]popup.Revision, error) {
	return gate(g.dep, func() ([]popup.Revision, error) { return g.repo.History(ctx, id) })
}

func (g *gatedReads) Audit(ctx context.Context, q popup.AuditQuery) ([]popup.AuditEntry, error) {
	return gate(g.dep, func() ([]popup.AuditEntry, error) { return g.repo.Audit(ctx, q) })
}

func (g *gatedReads) Snapshot(ctx context.Context) (int64, []popup.Popup, popup.Team, error) {
	var version int64
	var team popup.Team
	popups, err := gate(g.dep, func() (ps []popup.Popup, err error) {
		version, ps, team, err = g.repo.Snapshot(ctx)
		return ps, err
	})
	if err != nil {
		return 0, nil, popup.Team{}, err
	}
	return version, popups, team, nil
}

// gatedStats is the stats reader behind the MySQL gate.
type gatedStats struct {
	stats *mysqlstore.StatsRepo
	dep   *health.Dep
}

func (g *gatedStats) PopupStats(ctx context.Context, id int64, q popup.StatsQuery) (popup.Stats, error) {
	return gate(g.dep, func() (popup.Stats, error) { return g.stats.PopupStats(ctx, id, q) })
}

func (g *gatedStats) AllStats(ctx context.Context, q popup.StatsQuery) ([]popup.Stats, error) {
	return gate(g.dep, func() ([]popup.Stats, error) { return g.stats.AllStats(ctx, q) })
}

func (g *gatedStats) ExperimentDays(ctx context.Context, popupID int64, salt string, loc *time.Location) ([]popup.ExperimentDay, error) {
	return gate(g.dep, func() ([]popup.ExperimentDay, error) { return g.stats.ExperimentDays(ctx, popupID, salt, loc) })
}

func (g *gatedStats) ExperimentUserArms(ctx context.Context, popupID int64, salt string, each func(uid, arm string)) error {
	_, err := gate(g.dep, func() (struct{}, error) { return struct{}{}, g.stats.ExperimentUserArms(ctx, popupID, salt, each) })
	return err
}

func (g *gatedStats) GoalCounts(ctx context.Context, popupID int64, salt string) ([]popup.GoalCount, error) {
	return gate(g.dep, func() ([]popup.GoalCount, error) { return g.stats.GoalCounts(ctx, popupID, salt) })
}

func (g *gatedStats) GoalCountsExposedIn(ctx context.Context, popupID int64, salt string, from, to time.Time) ([]popup.GoalCount, error) {
	return gate(g.dep, func() ([]popup.GoalCount, error) { return g.stats.GoalCountsExposedIn(ctx, popupID, salt, from, to) })
}

func (g *gatedStats) CampaignGoals(ctx context.Context, id int64, goals []popup.Goal, from, to time.Time) ([]popup.CampaignGoal, error) {
	return gate(g.dep, func() ([]popup.CampaignGoal, error) { return g.stats.CampaignGoals(ctx, id, goals, from, to) })
}

// holdoutReads are the holdout's results' reads (httpapi.HoldoutReads): its phases from the
// settings, a cohort's goal counts from the stats.
type holdoutReads struct {
	*gatedSettings
	*gatedStats
}

// gatedSettings is the settings store behind the MySQL gate.
type gatedSettings struct {
	settings *mysqlstore.SettingsRepo
	dep      *health.Dep
}

func (g *gatedSettings) Get(ctx context.Context, name, def string) (string, error) {
	return gate(g.dep, func() (string, error) { return g.settings.Get(ctx, name, def) })
}

func (g *gatedSettings) Set(ctx context.Context, actor, name, value, def string) (string, error) {
	return gate(g.dep, func() (string, error) { return g.settings.Set(ctx, actor, name, value, def) })
}

func (g *gatedSettings) Pacing(ctx context.Context) (*popup.Pacing, error) {
	return gate(g.dep, func() (*popup.Pacing, error) { return g.settings.Pacing(ctx) })
}

func (g *gatedSettings) SetPacing(ctx context.Context, actor string, p popup.Pacing) (*popup.Pacing, error) {
	return gate(g.dep, func() (*popup.Pacing, error) { return g.settings.SetPacing(ctx, actor, p) })
}

func (g *gatedSettings) Holdout(ctx context.Context) (popup.Holdout, error) {
	return gate(g.dep, func() (popup.Holdout, error) { return g.settings.Holdout(ctx) })
}

func (g *gatedSettings) SetHoldout(ctx context.Context, actor string, percent int, now time.Time) (old, cur popup.Holdout, changed bool, err error) {
	_, err = gate(g.dep, func() (struct{}, error) {
		var err error
		old, cur, changed, err = g.settings.SetHoldout(ctx, actor, percent, now)
		return struct{}{}, err
	})
	return old, cur, changed, err
}

func (g *gatedSettings) HoldoutPhases(ctx context.Context) ([]popup.HoldoutPhase, error) {
	return gate(g.dep, func() ([]popup.HoldoutPhase, error) { return g.settings.HoldoutPhases(ctx) })
}
