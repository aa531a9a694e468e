// Package memlimit keeps the Go collector's soft memory limit just above what popup-api holds
// for long, its audience member sets, plus room for everything else: with GOGC at 400 a heap
// holding 160 MB of sets may otherwise grow to five times that before a collection, and the
// garbage of ordinary requests fills the difference (docs/PERFORMANCE.md, "Audience uploads and
// memory").
package memlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Headroom is the least room the limit leaves over the sets held, for the rest of the live heap
// and its garbage: the collector runs when that much is allocated beyond them.
const Headroom = 96 << 20

// Governor sets the collector's soft memory limit from the bytes of the sets held: their bytes
// plus the larger of Headroom and twice the rest of the live heap, never above the limit the
// process started with (GOMEMLIMIT); with no sets held it leaves that limit alone. It never lets
// the limit fall under the live heap (the collector would run back to back). Safe for
// concurrent use.
type Governor struct {
	mu       sync.Mutex
	held     int64 // the bytes of the sets held, as Held said last
	ceiling  int64 // the limit at start: GOMEMLIMIT, or math.MaxInt64 without one
	setLimit func(int64) int64
	liveHeap func() int64
	limit    int64 // the limit set last
}

// startLimit is the limit the process started with (GOMEMLIMIT), read before any governor moved
// it: a second governor in one process (tests) must not take the first one's limit for its
// ceiling.
var startLimit = debug.SetMemoryLimit(-1)

// New returns a governor of this process's memory limit.
func New() *Governor {
	return &Governor{ceiling: startLimit, setLimit: debug.SetMemoryLimit, liveHeap: liveHeap, limit: debug.SetMemoryLimit(-1)}
}

// Loading raises the limit for a set of bytes about to load beside those held: they are live
// before Held counts them, and a limit under the live heap would make the collector run back to
// back.
func (g *Governor) Loading(bytes int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.set(max(g.limit, g.limitFor(g.held+bytes)))
}

// Held sets the limit for sets of bytes.
func (g *Governor) Held(bytes int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = bytes
	g.set(g.limitFor(bytes))
}

// Limit is the limit set last.
func (g *Governor) Limit() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}

func (g *Governor) limitFor(bytes int64) int64 {
	if bytes <= 0 {
		return g.ceiling
	}
	rest := max(g.liveHeap()-bytes, 0)
	room := max(int64(Headroom), 2*rest)
	if bytes > math.MaxInt64-room {
		return g.ceiling
	}
	return min(g.ceiling, bytes+room)
}

func (g *Governor) set(limit int64) {
	if limit != g.limit {
		g.setLimit(limit)
		g.limit = limit
	}
}

// liveHeap is the heap the last collection found live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
