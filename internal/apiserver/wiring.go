package apiserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	adminslices "popupsvc/internal/admin"
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
	"popupsvc/internal/operator"
	"popupsvc/internal/privacy"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/uidauth"
)

// server is popup-api as Run wires it, step by step; closers run in reverse when Run returns.
type server struct {
	cfg     config.Config
	ops     []operator.Operator // the admin API's, recorded at MySQL's first answer
	log     *slog.Logger
	now     func() time.Time
	reg     *prometheus.Registry
	closers []func() error

	db                 *sql.DB
	stageDB            *sql.DB // the audience uploads' staged rows (mysqlstore.NewStagingPool)
	rdb, cfgRDB        redis.UniversalClient
	keys               redisstore.Keys
	metrics            *httpapi.Metrics
	mysqlDep, redisDep *health.Dep
	coverage           *redisstore.CoverageCheck

	holder     *snapshot.Holder
	subscribed chan struct{}
	refresher  *snapshot.Refresher
	loader     *snapshot.AudienceLoader
	audiences  audienceStore
	held       heldSets

	users   *redisstore.UserStore
	keyed   *privacy.Keyed // nil: POPUP_PRIVACY_KEY unset, erasures are off
	goals   *goalSet
	decider *decide.Decider
	public  *httpapi.Public
	reloads *coalesce.Group[int64]
}

func (s *server) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]() // closing: nothing left to answer
	}
}

// redisClient is a Redis client of o, closed when Run returns.
func (s *server) redisClient(o redisstore.ClientOptions) (redis.UniversalClient, error) {
	c, err := redisstore.NewClient(o)
	if err == nil {
		s.closers = append(s.closers, c.Close)
	}
	return c, err
}

// stores: the MySQL pool behind its gate, the Redis clients, and the dependency checks.
func (s *server) stores() error {
	cfg := s.cfg
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = httpapi.NewMetrics(s.reg)
	depUp := health.NewUpGauge(s.reg)
	s.mysqlDep = &health.Dep{Name: "mysql", Every: depCheckEvery, Timeout: mysqlCheckLimit, Backoff: health.DefaultBackoff,
		Log: s.log, Gauge: depUp, Fatal: func(err error) bool { return errors.Is(err, mysqlstore.ErrSchema) }}
	// Every MySQL call of popup-api but the hot path's state loads passes the gate: refused at
	// once with a 503 while MySQL is known down, and MySQL marked down by a call that finds it
	// unreachable.
	gate := &mysqlstore.Gate{Down: s.mysqlDep.Down, Failed: s.mysqlDep.Failed, Err: httpapi.ErrMySQLUnavailable}
	db, err := mysqlstore.NewGatedPool(cfg.MySQLDSN, cfg.MySQLMaxOpen, gate)
	if err != nil {
		return err
	}
	s.db = db
	s.closers = append(s.closers, db.Close)
	if s.stageDB, err = mysqlstore.NewStagingPool(cfg.MySQLDSN, gate); err != nil {
		return err
	}
	s.closers = append(s.closers, s.stageDB.Close)
	s.mysqlDep.Check = mysqlCheck(db, cfg.MySQLMaxOpen, s.recordOperators)
	ropts := redisstore.OptionsOf(cfg)
	if s.rdb, err = s.redisClient(ropts); err != nil {
		return err
	}
	// The config cache moves the whole config (megabytes at 10,000 popups) and its reloads run off
	// the hot path: they get their own client with the worker's one-second floor instead of the
	// hot path's 50 ms timeout, so a loaded machine does not turn an admin write's propagation
	// (or a snapshot reload) into a timeout.
	copts := ropts
	copts.Timeout, copts.PoolSize = max(ropts.Timeout, time.Second), 4
	if s.cfgRDB, err = s.redisClient(copts); err != nil {
		return err
	}
	s.keys = redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	s.redisDep = &health.Dep{Name: "redis", Every: depCheckEvery, Timeout: redisCheckLimit, Backoff: health.DefaultBackoff,
		Log: s.log, Gauge: depUp, Check: func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }}
	// A Redis Cluster's coverage setting decides the blast radius of a dead master: checked at
	// start and whenever Redis comes back (nil, checking nothing, unless Redis is a cluster).
	s.coverage = redisstore.NewCoverageCheck(s.rdb, s.log, s.reg)
	return nil
}

// snapshots: the config snapshot, its refresher and the audience sets it is built on.
func (s *server) snapshots() error {
	cfg, metrics, log := s.cfg, s.metrics, s.log
	s.holder = &snapshot.Holder{}
	s.subscribed = make(chan struct{})
	s.refresher = &snapshot.Refresher{Cache: redisstore.NewConfigCache(s.cfgRDB, s.keys), Source: mysqlstore.NewPopupRepo(s.db),
		Holder: s.holder, Poll: cfg.ConfigPoll, Links: cfg.Links(), Pacing: cfg.DefaultPacing(),
		Backoff: health.DefaultBackoff, Log: log, Now: s.now, Subscribed: s.subscribed,
		OnSwap: func(sn *snapshot.Snapshot) {
			metrics.Version.Set(float64(sn.Version))
			metrics.BuiltAt.Set(float64(sn.BuiltAt.UnixNano()) / 1e9)
			log.Info("config snapshot swapped", "version", sn.Version, "active", len(sn.Ordered))
		}}
	// The loader follows the config (every install tells it what the popups target) and each new
	// generation of sets rebuilds the snapshot.
	// The collector's limit follows the audience sets held and loading (internal/memlimit).
	budget := memlimit.New()
	s.audiences = audienceStore{mysqlstore.NewAudienceRepo(s.db).StageThrough(s.stageDB).OnLoad(budget.Loading)}
	s.loader = &snapshot.AudienceLoader{Source: s.audiences, Memory: int64(cfg.AudienceMemory), Poll: audiencePoll, Log: log,
		OnChange: func(*audience.Sets) { s.refresher.Rebuild() }, Budget: budget}
	s.refresher.Audiences = s.loader
	s.held = heldSets{loader: s.loader, store: s.audiences}
	registerAudienceMetrics(s.reg, s.loader, s.holder)
	// A dependency coming back is the moment a snapshot (or a newer one) can be had.
	s.mysqlDep.OnUp = func() { s.refresher.Kick(); s.loader.Kick() }
	s.redisDep.OnUp = func() { s.refresher.Kick(); s.coverage.Kick() }
	return nil
}

// userStates: the users' state in Redis, loaded from MySQL on a miss.
func (s *server) userStates() error {
	cfg := s.cfg
	var pipe *redisstore.Pipeline
	if cfg.RedisPipelining {
		var err error
		if pipe, err = redisstore.NewPipeline(s.rdb); err != nil {
			return fmt.Errorf("redis autopipeline: %w", err)
		}
		// It carries the Redis calls of the requests in flight: it closes (flushing what it
		// holds) only after both listeners have shut down, when Run returns.
		s.closers = append(s.closers, func() error { pipe.Close(); return nil })
	}
	users := redisstore.NewUserStore(s.rdb, s.keys, cfg.UserStateTTL, mysqlstore.NewUserStateLoader(s.db), cfg.StateLoadLimit, pipe)
	users.SetActionRateLimit(cfg.ActionRateLimit)
	users.RememberRecorded(cfg.RecentStateCacheSize)
	if cfg.PrivacyKey != "" {
		var err error
		if s.keyed, err = privacy.NewKeyed(cfg.PrivacyKey); err != nil {
			return fmt.Errorf("POPUP_PRIVACY_KEY: %w", err)
		}
		users.SetErasedMarkers(s.keyed)
	} else {
		s.log.Warn("POPUP_PRIVACY_KEY is not set: user erasures are off (DELETE /admin/v1/users/{uid} answers 501)")
	}
	if cfg.RedisAckReplicas > 0 {
		// WAIT blocks its connection for up to an action's budget (four request budgets): these
		// records get a client whose read timeout allows that.
		aopts := redisstore.OptionsOf(cfg)
		aopts.Timeout = 4*cfg.RequestBudget + cfg.RedisTimeout
		ackRDB, err := s.redisClient(aopts)
		if err != nil {
			return err
		}
		users.SetAckReplicas(cfg.RedisAckReplicas, ackRDB)
	}
	var known *redisstore.KnownUsers
	if cfg.KnownUsers > 0 {
		var err error
		if known, err = redisstore.NewKnownUsers(s.keys, cfg.KnownUsers, cfg.KnownUsersFP); err != nil {
			return err
		}
	}
	users.UseKnownUsers(known, redisstore.NewStateMetrics(s.reg))
	s.users = users
	return nil
}

// decisions: the decision use case, its local answers and the goals conversions may name.
func (s *server) decisions() error {
	cfg := s.cfg
	local := decide.NewLocalAnswers(cfg.LocalAnswerCacheSize)
	s.reg.MustRegister(local.Collectors()...)
	s.goals = &goalSet{catalog: redisstore.NewGoalCatalog(s.cfgRDB, s.keys), source: goalStore{mysqlstore.NewGoalRepo(s.db)}, log: s.log}
	s.decider = &decide.Decider{Snapshots: s.holder, Users: s.users,
		Breakers: breaker.NewSet(s.keys.Shards, breakerThreshold, breakerCooldown, s.keys.Shard),
		Budget:   cfg.RequestBudget, Local: local, Metrics: decide.NewMetrics(s.reg), Log: s.log,
		Conversions: s.users, Goals: s.goals, Reservations: s.users}
	if cfg.RecentStateCacheSize > 0 {
		s.decider.Recent = s.users
	}
	return nil
}

// publicAPI: the public listener's API and its readiness gauge.
func (s *server) publicAPI() error {
	cfg := s.cfg
	s.public = &httpapi.Public{Snapshots: s.holder, Decider: s.decider, Now: s.now, Log: s.log, Metrics: s.metrics,
		CORS: cfg.CORS(), IngestKeys: mysqlstore.NewIngestKeyRepo(s.db)}
	s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "popup_ready",
		Help: "1 while the instance is ready (/readyz's rule but for the drain at shutdown: a config snapshot loaded, the audiences it targets loaded or waited for)."},
		func() float64 {
			if s.public.Ready() {
				return 1
			}
			return 0
		}))
	if len(cfg.UIDHMACKeys) > 0 {
		var err error
		if s.public.UIDAuth, err = uidauth.New(cfg.UIDHMACKeys, cfg.UIDHMACMaxAge); err != nil {
			return fmt.Errorf("POPUP_UID_HMAC_KEYS: %w", err)
		}
		s.log.Info("uid signatures required", "header", uidauth.Header, "keys", len(cfg.UIDHMACKeys), "max_age", cfg.UIDHMACMaxAge)
	}
	if len(cfg.CORSOrigins) > 0 {
		s.log.Info("CORS on the public listener", "origins", cfg.CORSOrigins)
	}
	return nil
}

// adminAPI: the admin shell and its feature slices (internal/admin).
func (s *server) adminAPI(ops []operator.Operator) (*gin.Engine, error) {
	cfg, db, now := s.cfg, s.db, s.now
	// A reload republishes every config, so concurrent admin writes share one (each still returns
	// only after a reload that began after its commit): a bulk import costs O(n), not O(n²).
	s.reloads = &coalesce.Group[int64]{Fn: s.refresher.Reload}
	popups, stats, settings := mysqlstore.NewPopupRepo(db), mysqlstore.NewStatsRepo(db), mysqlstore.NewSettingsRepo(db)
	privacyStore := mysqlstore.NewPrivacyRepo(db)
	// The writes run the use case; an experiment's phase starts on the server's clock.
	writes := manage.New(manage.TxFunc[*mysqlstore.Tx](popups.InTx), now)
	admin := &httpapi.Admin{Operators: ops, Log: s.log, Gatherer: s.reg, Registerer: s.reg,
		Slices: adminslices.New(&httpapi.Shared{Log: s.log, Now: now, Reload: s.reloads.Do}, adminslices.Deps{
			Repo: popupStore{Service: writes, popupReads: popups}, Users: s.users, Snapshots: s.holder, Decider: s.decider,
			Links: cfg.Links(), Stats: stats, ExperimentDays: stats, ExperimentGoals: stats, CampaignGoals: stats,
			Holdout: holdoutReads{settings, stats}, Settings: settings, DefaultPacing: cfg.DefaultPacing(),
			LogRetention: cfg.ActionLogRetention,
			Audiences:    manage.NewAudiences(s.audiences, s.held, int64(cfg.AudienceMemory), now).PaceUploads(cfg.AudienceUploadRate), AudienceSets: s.held,
			Goals: manage.NewGoals(s.goals.source, now), GoalsChanged: s.goals.publish,
			Erasures:   &privacy.Eraser{Store: privacyStore, Keyed: s.keyed, Now: now},
			Exports:    &privacy.Exporter{Store: privacyStore, States: s.users, Audiences: s.audiences, Sets: s.held, Now: now},
			IngestKeys: mysqlstore.NewIngestKeyRepo(db), Changes: mysqlstore.NewChangeLog(db),
			Status: s.statusPorts(privacyStore),
		})}
	return admin.Router()
}

// serve runs both listeners and every background loop until ctx ends.
func (s *server) serve(ctx context.Context, adminRouter *gin.Engine, hooks Hooks) error {
	cfg, log := s.cfg, s.log
	publicSrv := httpapi.NewServer(cfg.HTTPAddr, s.public.Router())
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
	for _, run := range []func(context.Context) error{s.refresher.Run, s.loader.Run, s.goals.Run, s.mysqlDep.Run, s.redisDep.Run, s.coverage.Run} {
		g.Go(func() error { return run(gctx) })
	}
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
		for _, ch := range []<-chan struct{}{s.subscribed, s.public.AudiencesSettled} {
			select {
			case <-ch:
			case <-gctx.Done():
				return nil
			}
		}
		log.Info("popup-api serving", "public", publicAddr.String(), "admin", adminAddr.String(), "config_version", s.holder.Load().Version)
		if hooks.OnReady != nil {
			hooks.OnReady(publicAddr, adminAddr)
		}
		return nil
	})
	err := g.Wait()
	// A reload whose callers left (their requests ended) may still run: it uses the Redis client
	// and the database pool, which close when Run returns.
	s.reloads.Wait()
	return err
}
