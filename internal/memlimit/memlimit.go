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
	"time"
)

// Headroom is the least room the limit leaves over the sets held, for the rest of the live heap
// and its garbage: the collector runs when that much is allocated beyond them.
const Headroom = 96 << 20

// Governor sets the collector's soft memory limit from the bytes of the sets held: their bytes
// plus the larger of Headroom and twice the rest of the live heap, never above the limit the
// process started with (GOMEMLIMIT); with no sets held it leaves that limit alone. It never lets
// the limit fall under the live heap (the collector would run back to back). When the sets held
// drop by Headroom or more, it hands their memory back to the system ReleaseDelay later. Safe
// for concurrent use.
type Governor struct {
	mu       sync.Mutex
	held     int64 // the bytes of the sets held, as Held said last
	ceiling  int64 // the limit at start: GOMEMLIMIT, or math.MaxInt64 without one
	setLimit func(int64) int64
	liveHeap func() int64
	limit    int64 // the limit set last
	// release hands the garbage back to the system (debug.FreeOSMemory); after runs it later.
	release   func()
	after     func(time.Duration, func())
	releasing bool // a release is scheduled
}

// ReleaseDelay is how long after the sets held drop by Headroom or more the governor collects
// and hands their memory back (debug.FreeOSMemory): long enough that the snapshot and the
// requests still reading the old sets are done with them. Without it a dropped set (160 MB for
// 20 million members) stays in the heap until a collection that the limit, set from a live heap
// that still counted it, need not call for, and the next large load lands on top of it: a 20 M
// replace after the list was cut back to 1 M peaked at 423 MiB, against 244-264 MiB for the
// first (make bench-upload).
const ReleaseDelay = 2 * time.Second

// startLimit is the limit the process started with (GOMEMLIMIT), read before any governor moved
// it: a second governor in one process (tests) must not take the first one's limit for its
// ceiling.
var startLimit = debug.SetMemoryLimit(-1)

// New returns a governor of this process's memory limit.
func New() *Governor {
	return &Governor{ceiling: startLimit, setLimit: debug.SetMemoryLimit, liveHeap: liveHeap, limit: debug.SetMemoryLimit(-1),
		release: debug.FreeOSMemory, after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
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
	dropped := g.held - bytes
	g.held = bytes
	g.set(g.limitFor(bytes))
	if dropped >= Headroom && g.release != nil && !g.releasing {
		g.releasing = true
		g.after(ReleaseDelay, g.released)
	}
}

// released hands the dropped sets' memory back, then sets the limit from the live heap that
// collection found.
func (g *Governor) released() {
	g.release()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releasing = false
	g.set(g.limitFor(g.held))
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
