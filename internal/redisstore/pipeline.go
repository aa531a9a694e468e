package redisstore

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Pipeline coalesces the hot-path commands of concurrent requests into shared pipelines
// (go-redis autopipelining): under load many requests share one write, one read and one Redis
// wake-up; with nothing waiting a command goes out at once.
//
// On a Redis Cluster it keeps one autopipeliner per master, so that a pipeline only ever holds
// commands for one node and a command for a live master never waits on a dead one. The cluster
// client's own autopipeliner does not promise that: it queues commands in GOMAXPROCS shards cut
// by slot range, which straddle masters, runs a shard's batch as one cluster pipeline that
// returns only when every node in it has answered (after its retries and their backoff), and
// runs one batch per shard at a time. While a master was down, the users of a live master whose
// slots shared a shard with it waited for it and degraded
// (TestDeadClusterMasterDelaysOnlyItsOwnUsers; docs/RELIABILITY.md, "A dead Cluster master").
type Pipeline struct {
	rdb redis.UniversalClient
	one *redis.AutoPipeliner // one node, or Sentinel's master
	cc  *redis.ClusterClient // a cluster: one autopipeliner per master, in nodes
	// nodes maps a master's *redis.Client to its autopipeliner (the node client's own, made on
	// first use), so that Close can flush them.
	nodes sync.Map
}

// NewPipeline returns the autopipelining of rdb's hot-path commands. Close it after the last
// command was submitted, before rdb.
func NewPipeline(rdb redis.UniversalClient) (*Pipeline, error) {
	p := &Pipeline{rdb: rdb}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		p.cc = cc
		return p, nil
	}
	ap, err := rdb.AsyncAutoPipeline()
	if err != nil {
		return nil, err
	}
	p.one = ap
	return p, nil
}

// Do runs cmd, whose keys all share key's hash slot, in the pipeline of the node serving key and
// waits for its reply within ctx. An autopipeliner runs a queued command on its own context, so
// the wait is what honours ctx: on ctx's end Do returns ctx's error and the command may still be
// filled in later (callers then must not read it).
//
// On a cluster, a command the node sent elsewhere (MOVED, ASK: its slots moved, a replica took
// them over) or refused for now (TRYAGAIN, CLUSTERDOWN, LOADING, READONLY), or a node the
// topology has dropped, goes through the cluster client, which follows redirects and re-reads the
// slot map; none of those executed the command.
func (p *Pipeline) Do(ctx context.Context, key string, cmd redis.Cmder) error {
	if p.cc == nil {
		return p.one.Submit(ctx, cmd).WaitContext(ctx)
	}
	ap := p.forKey(ctx, key)
	if ap == nil {
		return p.rdb.Process(ctx, cmd)
	}
	err := ap.Submit(ctx, cmd).WaitContext(ctx)
	switch {
	case err == nil:
		return nil
	case elsewhere(err):
		return p.rdb.Process(ctx, cmd)
	case !isRedisReply(err):
		// No answer from the node (refused, reset, or none within ctx): it may be dead and its
		// slots promoted elsewhere. The cluster client re-reads the slot map at once when a node
		// cannot be reached, and so must we, or the users of its slots stay degraded until the
		// periodic re-read (POPUP_REDIS_CLUSTER_RELOAD). A re-read is lazy and shared: at most
		// one runs at a time, in the background.
		p.cc.ReloadState(ctx)
		if ctx.Err() == nil {
			// Within the budget, the cluster client retries it as it would have (the same node
			// once, then another, which answers MOVED once a replica took the slots).
			return p.rdb.Process(ctx, cmd)
		}
	}
	return err
}

// isRedisReply says whether err is a reply of the Redis server (an error it answered), as
// opposed to no answer at all.
func isRedisReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// forKey returns the autopipeliner of the master serving key, nil when the slot map has none or
// the node's client is closed (the caller then goes through the cluster client).
func (p *Pipeline) forKey(ctx context.Context, key string) *redis.AutoPipeliner {
	node, err := p.cc.MasterForKey(ctx, key)
	if err != nil {
		return nil
	}
	if v, ok := p.nodes.Load(node); ok {
		ap := v.(*redis.AutoPipeliner)
		if !ap.IsClosed() {
			return ap
		}
		// The topology dropped the node (its client closed its autopipeliner).
		p.nodes.CompareAndDelete(node, ap)
	}
	ap, err := node.AsyncAutoPipeline()
	if err != nil || ap.IsClosed() {
		return nil
	}
	p.nodes.Store(node, ap)
	return ap
}

// elsewhere says whether err means that a node did not execute the command and the cluster client
// should route it (see Do).
func elsewhere(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, redis.ErrClosed) {
		return true
	}
	for _, prefix := range []string{"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

// Close flushes what the pipelines hold and stops them.
func (p *Pipeline) Close() error {
	if p.one != nil {
		return p.one.Close()
	}
	var errs []error
	p.nodes.Range(func(_, v any) bool {
		errs = append(errs, v.(*redis.AutoPipeliner).Close())
		return true
	})
	return errors.Join(errs...)
}
