// Package coalesce shares one run of an expensive, idempotent refresh among the callers that ask
// for it at about the same time, without ever answering a caller with a run that began before it
// asked: each call returns the result of a run that started after the call did. Callers arriving
// while a run is in flight share the next run, which starts as soon as the current one ends.
//
// popup-api uses it for the config reload after admin writes: every write must be visible when
// its request returns, but a burst of writes needs one reload, not one each (a reload reads and
// republishes every config, so a bulk import of n popups cost O(n²) without it).
package coalesce

import (
	"context"
	"sync"
	"time"
)

// Group runs Fn for its callers. The zero value is not usable: set Fn.
type Group[T any] struct {
	// Fn does the work. It runs on its own context (it serves several callers, so no caller's
	// context may cancel it), bounded by Timeout.
	Fn func(ctx context.Context) (T, error)
	// Timeout bounds one run of Fn (default 30 s).
	Timeout time.Duration

	mu      sync.Mutex
	running bool
	next    *run[T] // the run the callers arriving now will share; nil until one asks
	runs    sync.WaitGroup
}

// Wait returns once no run is in flight: the owner calls it at shutdown, after the last Do (a
// run outlives the callers that left, and must not outlive what it uses).
func (g *Group[T]) Wait() { g.runs.Wait() }

type run[T any] struct {
	done    chan struct{}
	val     T
	err     error
	callers int // how many calls share this run (under Group.mu)
}

// Do returns the result of a run of Fn that started after Do was called. If ctx ends first, Do
// returns ctx's error; the run goes on for the other callers.
func (g *Group[T]) Do(ctx context.Context) (T, error) {
	g.mu.Lock()
	r := g.next
	if r == nil {
		r = &run[T]{done: make(chan struct{})}
		g.next = r
	}
	r.callers++
	if !g.running {
		g.startLocked()
	}
	g.mu.Unlock()
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// startLocked starts the pending run; g.mu is held.
func (g *Group[T]) startLocked() {
	r := g.next
	g.next = nil
	g.running = true
	g.runs.Add(1)
	go func() {
		defer g.runs.Done()
		timeout := g.Timeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		r.val, r.err = g.Fn(ctx)
		cancel()
		close(r.done)
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.next != nil {
			g.startLocked()
			return
		}
		g.running = false
	}()
}
