package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batcher coalesces the Redis commands of concurrent requests into pipelines: a few loops each
// take whatever commands are waiting (up to MaxBatch) and send them in one round trip, so under
// load many requests share one write, one read and one Redis event-loop wake-up. With nothing
// waiting a command goes out at once: batching adds no delay, it only forms under load.
type Batcher struct {
	rdb      redis.UniversalClient
	calls    chan *call
	maxBatch int
	timeout  time.Duration
	loops    int
}

type call struct {
	cmd  redis.Cmder
	done chan struct{} // buffered: the loop never blocks on a caller that gave up
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// NewBatcher returns a batcher with loops concurrent pipelines of up to maxBatch commands; each
// pipeline gets timeout.
func NewBatcher(rdb redis.UniversalClient, loops, maxBatch int, timeout time.Duration) *Batcher {
	return &Batcher{rdb: rdb, calls: make(chan *call, loops*maxBatch), maxBatch: maxBatch, timeout: timeout, loops: loops}
}

// Do sends cmd in the next pipeline and waits for its reply or ctx, whichever comes first.
func (b *Batcher) Do(ctx context.Context, cmd redis.Cmder) error {
	c := callPool.Get().(*call)
	c.cmd = cmd
	select {
	case b.calls <- c:
	case <-ctx.Done():
		c.cmd = nil
		callPool.Put(c)
		return ctx.Err()
	}
	select {
	case <-c.done:
		c.cmd = nil
		callPool.Put(c)
		return cmd.Err()
	case <-ctx.Done():
		// The loop still owns c and will signal done into its buffer; c is dropped, not reused.
		return ctx.Err()
	}
}

// Run runs the pipeline loops until ctx ends.
func (b *Batcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range b.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.loop(ctx)
		}()
	}
	wg.Wait()
	return nil
}

func (b *Batcher) loop(ctx context.Context) {
	batch := make([]*call, 0, b.maxBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-b.calls:
			batch = append(batch[:0], c)
		}
	fill:
		for len(batch) < b.maxBatch {
			select {
			case c := <-b.calls:
				batch = append(batch, c)
			default:
				break fill
			}
		}
		b.exec(batch)
	}
}

func (b *Batcher) exec(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if len(batch) == 1 {
		_ = b.rdb.Process(ctx, batch[0].cmd)
	} else {
		pipe := b.rdb.Pipeline()
		for _, c := range batch {
			_ = pipe.Process(ctx, c.cmd)
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
	}
	for _, c := range batch {
		c.done <- struct{}{}
	}
}
