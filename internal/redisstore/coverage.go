package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// coverageTimeout bounds one check of every node's setting.
const coverageTimeout = 5 * time.Second

// CoverageCheck watches a Redis Cluster's cluster-require-full-coverage setting. With it yes (the
// server's default) on a node, that node refuses every query while any master's slots are
// uncovered (a dead master before its replica's promotion): every user's GET degrades, not only
// the dead master's users, and the contract's blast radius (docs/RELIABILITY.md) is lost. The
// check asks every node (CONFIG GET) whenever Kick is called (Redis came up: at start and on
// reconnect) and every Every; it logs a warning naming the nodes, and exports
// popup_redis_cluster_full_coverage_nodes for the alert rules (deploy/prometheus).
type CoverageCheck struct {
	cc    *redis.ClusterClient
	log   *slog.Logger
	nodes prometheus.Gauge
	// Every is the interval of the checks between kicks.
	Every time.Duration

	kick chan struct{}

	mu      sync.Mutex
	last    []string  // the nodes with the setting yes at the last check that read every node
	lastAt  time.Time // when a check last ended (zero before)
	lastErr error     // why that check could not read every node
}

// NewCoverageCheck returns the check of rdb's nodes and registers its gauge on reg, or nil (a
// check that does nothing) when rdb is not a cluster client.
func NewCoverageCheck(rdb redis.UniversalClient, log *slog.Logger, reg prometheus.Registerer) *CoverageCheck {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	c := &CoverageCheck{cc: cc, log: log, Every: 10 * time.Minute, kick: make(chan struct{}, 1),
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "popup_redis_cluster_full_coverage_nodes",
			Help: "Redis Cluster nodes with cluster-require-full-coverage yes: while one master's slots are uncovered each of them refuses every query, and every user's GET degrades. Should be 0 (deploy/ sets it no); absent unless Redis is a cluster.",
		})}
	reg.MustRegister(c.nodes)
	return c
}

// Kick asks for a check soon (the dependency came back: its nodes may have been replaced).
func (c *CoverageCheck) Kick() {
	if c == nil {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run checks on every Kick (the health check calls it when Redis comes up: at start and after an
// outage) and every Every, until ctx ends. A check that cannot read a node's setting (the node is
// down, CONFIG renamed by a managed service) is logged and leaves the gauge as it was.
func (c *CoverageCheck) Run(ctx context.Context) error {
	if c == nil {
		return nil
	}
	t := time.NewTicker(c.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, coverageTimeout)
		_, err := c.Check(cctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("redis cluster: could not read cluster-require-full-coverage", "err", err)
		}
	}
}

// Last is the outcome of the last check: the nodes with the setting yes, sorted, as the last
// check that read every node found them; when a check last ended (zero before the first); and why
// it could not read every node, if it could not.
func (c *CoverageCheck) Last() (fullCoverage []string, at time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.last), c.lastAt, c.lastErr
}

func (c *CoverageCheck) remember(full []string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.last = full
	}
	c.lastAt, c.lastErr = time.Now(), err
}

// Check reads the setting on every node the client knows (masters and replicas), sets the gauge
// and warns when a node has it yes. It returns those nodes' addresses, sorted.
func (c *CoverageCheck) Check(ctx context.Context) ([]string, error) {
	var (
		mu   sync.Mutex
		full []string
	)
	err := c.cc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		v, err := node.ConfigGet(ctx, "cluster-require-full-coverage").Result()
		if err != nil {
			return fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		setting, ok := v["cluster-require-full-coverage"]
		if !ok {
			return fmt.Errorf("%s: CONFIG GET cluster-require-full-coverage answered nothing", node.Options().Addr)
		}
		if strings.EqualFold(setting, "yes") {
			mu.Lock()
			full = append(full, node.Options().Addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		c.remember(nil, err)
		return nil, err
	}
	slices.Sort(full)
	c.remember(full, nil)
	c.nodes.Set(float64(len(full)))
	if len(full) > 0 {
		c.log.Warn("redis cluster: cluster-require-full-coverage is yes: while one master's slots are uncovered "+
			"(a dead master until its replica is promoted) these nodes refuse every query and every user's GET degrades, "+
			"not only the dead master's users; set cluster-require-full-coverage no on every node (docs/RUNBOOK.md)",
			"nodes", full)
	}
	return full, nil
}
