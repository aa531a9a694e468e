//go:build chaos

package chaos

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// schedWatch samples, every schedEvery, how long each thread of some processes has waited on a
// CPU run queue: the second field of /proc/PID/task/TID/schedstat, nanoseconds runnable but not
// running. It is the kernel's own account of a process kept off the cores, read for popup-api and
// redis-server beside a scenario's load, so that a slow or degraded answer can be set against it
// (waits). The counters are cumulative: a sample taken late (this test process starved too)
// still accounts for every nanosecond, only over a longer interval.
type schedWatch struct {
	rec   *recorder
	procs []watchedProc
	mu    sync.Mutex
	snaps []schedSnap
	stop  func()
}

// watchedProc is a process whose threads are watched: all of them (popup-api, whose goroutines
// run on any), or its main thread only (redis-server, which serves every command on it).
type watchedProc struct {
	pid        int
	mainThread bool
}

type schedSnap struct {
	at    time.Duration   // on rec's clock
	waits []map[int]int64 // per watched process: thread id → cumulative run-queue wait, ns
}

const schedEvery = 10 * time.Millisecond

// maxSchedSnaps bounds the samples in count (10 minutes at schedEvery) as stop bounds them in
// time.
const maxSchedSnaps = 60_000

func watchSched(rec *recorder, procs ...watchedProc) *schedWatch {
	w := &schedWatch{rec: rec, procs: procs}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(schedEvery)
		defer tick.Stop()
		for n := 0; n < maxSchedSnaps; n++ {
			w.sample()
			select {
			case <-done:
				w.sample()
				return
			case <-tick.C:
			}
		}
	})
	w.stop = sync.OnceFunc(func() { close(done); wg.Wait() })
	return w
}

func (w *schedWatch) sample() {
	snap := schedSnap{waits: make([]map[int]int64, len(w.procs))}
	for i, p := range w.procs {
		snap.waits[i] = runqWaits(p)
	}
	snap.at = w.rec.now()
	w.mu.Lock()
	w.snaps = append(w.snaps, snap)
	w.mu.Unlock()
}

// runqWaits reads the cumulative run-queue wait of p's threads (none once p is gone).
func runqWaits(p watchedProc) map[int]int64 {
	out := map[int]int64{}
	tids := []int{p.pid}
	if !p.mainThread {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(p.pid) + "/task")
		if err != nil {
			return out
		}
		tids = tids[:0]
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				tids = append(tids, tid)
			}
		}
	}
	for _, tid := range tids {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "task", strconv.Itoa(tid), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(raw))
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out[tid] = ns
		}
	}
	return out
}

// waits returns, for the watched process i, how long its threads waited on a run queue between
// the last sample at or before from and the first at or after to (the whole interval of
// [from, to), rounded out to samples): the longest wait of one thread, and of all together.
func (w *schedWatch) waits(i int, from, to time.Duration) (longest, total time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.snaps) == 0 {
		return 0, 0
	}
	a := sort.Search(len(w.snaps), func(k int) bool { return w.snaps[k].at > from }) - 1
	b := sort.Search(len(w.snaps), func(k int) bool { return w.snaps[k].at >= to })
	a, b = max(a, 0), min(b, len(w.snaps)-1)
	before, after := w.snaps[a].waits[i], w.snaps[b].waits[i]
	for tid, ns := range after {
		if prev, ok := before[tid]; ok {
			d := time.Duration(ns - prev)
			longest = max(longest, d)
			total += d
		}
	}
	return longest, total
}
