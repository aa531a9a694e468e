package drain_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"popupsvc/internal/event"
)

// BenchmarkDrain measures the whole drain (claim from Redis, decode, write to MySQL, acknowledge)
// of b.N queued events, against the real MariaDB and Redis of the test harness, and reports
// events/s. "one-by-one" is the naive baseline: the same loop, but every event is its own MySQL
// transaction of two single-row statements. Run it with
//
//	go test -run '^$' -bench '^BenchmarkDrain$' -benchtime 3s ./internal/drain/
//
// (the POPUP_TEST_* variables set, as `make test` does); docs/PERFORMANCE.md has the figures.
func BenchmarkDrain(b *testing.B) {
	modes := []struct {
		name     string
		shards   int
		batch    int
		oneByOne bool
	}{
		{name: "one-by-one", shards: 1, batch: 500, oneByOne: true},
		{name: "batched-100", shards: 1, batch: 100},
		{name: "batched-500", shards: 1, batch: 500},
		{name: "batched-2000", shards: 1, batch: 2000},
		{name: "batched-500-4shards", shards: 4, batch: 500},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			n := b.N // events; ns/op is per event
			e := newEnv(b, m.shards, 15*time.Second)
			e.produce(fmt.Sprintf("bench%d", n), 0, n)
			var written atomic.Int64
			done := make(chan struct{})
			write := e.writer.WriteBatch
			if m.oneByOne {
				write = e.writer.WriteOneByOne
			}
			sink := sinkFunc(func(ctx context.Context, events []event.Event) error {
				if err := write(ctx, events); err != nil {
					return err
				}
				if written.Add(int64(len(events))) == int64(n) {
					close(done)
				}
				return nil
			})
			cfg := e.config("bench")
			cfg.BatchSize = m.batch
			b.ResetTimer()
			start := time.Now()
			r := e.start(sink, cfg)
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("drained %d of %d events in 5 minutes", written.Load(), n)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			r.stop(b)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
		})
	}
}
