package coalesce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gated is an Fn that numbers its runs and holds each until the test releases it.
type gated struct {
	runs    atomic.Int64
	started chan int64
	release chan error
}

func newGated() *gated { return &gated{started: make(chan int64, 16), release: make(chan error)} }

func (f *gated) fn(ctx context.Context) (int64, error) {
	n := f.runs.Add(1)
	f.started <- n
	select {
	case err := <-f.release:
		return n, err
	case <-ctx.Done():
		return n, ctx.Err()
	}
}

func waitStarted(t *testing.T, f *gated, want int64) {
	t.Helper()
	select {
	case n := <-f.started:
		require.Equal(t, want, n)
	case <-time.After(5 * time.Second):
		t.Fatalf("run %d did not start", want)
	}
}

type result struct {
	v   int64
	err error
}

func TestCallersDuringARunShareTheNextRun(t *testing.T) {
	t.Parallel()
	f := newGated()
	g := &Group[int64]{Fn: f.fn}
	first := make(chan result, 1)
	go func() { v, err := g.Do(context.Background()); first <- result{v, err} }()
	waitStarted(t, f, 1)

	// Five callers arrive while run 1 is in flight: none may get run 1 (it began before they
	// asked); all share run 2.
	const late = 5
	var wg sync.WaitGroup
	got := make(chan result, late)
	for range late {
		wg.Go(func() { v, err := g.Do(context.Background()); got <- result{v, err} })
	}
	// Wait (bounded) until all of them have joined the pending run, then end run 1.
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		joined := 0
		if g.next != nil {
			joined = g.next.callers
		}
		g.mu.Unlock()
		if joined == late {
			break
		}
		require.False(t, time.Now().After(deadline), "only %d of %d callers joined the pending run", joined, late)
		time.Sleep(time.Millisecond)
	}
	f.release <- nil
	assert.Equal(t, result{1, nil}, <-first)
	waitStarted(t, f, 2)
	f.release <- nil
	wg.Wait()
	close(got)
	for r := range got {
		assert.Equal(t, result{2, nil}, r, "a caller that arrived during run 1 gets run 2")
	}
	assert.Equal(t, int64(2), f.runs.Load(), "six callers, two runs")
}

func TestIdleGroupRunsOncePerCall(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	g := &Group[int64]{Fn: func(context.Context) (int64, error) { return runs.Add(1), nil }}
	for i := int64(1); i <= 3; i++ {
		v, err := g.Do(context.Background())
		require.NoError(t, err)
		assert.Equal(t, i, v, "sequential calls each start a run of their own")
	}
}

func TestErrorsReachEveryCallerOfThatRun(t *testing.T) {
	t.Parallel()
	f := newGated()
	g := &Group[int64]{Fn: f.fn}
	boom := errors.New("mysql down")
	done := make(chan result, 1)
	go func() { v, err := g.Do(context.Background()); done <- result{v, err} }()
	waitStarted(t, f, 1)
	f.release <- boom
	r := <-done
	assert.ErrorIs(t, r.err, boom)

	// The next call is not stuck behind the failed run.
	go func() { v, err := g.Do(context.Background()); done <- result{v, err} }()
	waitStarted(t, f, 2)
	f.release <- nil
	assert.Equal(t, result{2, nil}, <-done)
}

func TestCallerContextEndsWaitNotRun(t *testing.T) {
	t.Parallel()
	f := newGated()
	g := &Group[int64]{Fn: f.fn}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { v, err := g.Do(ctx); done <- result{v, err} }()
	waitStarted(t, f, 1)
	cancel()
	r := <-done
	assert.ErrorIs(t, r.err, context.Canceled)

	// The run was not cancelled with the caller: a second caller still gets a fresh run after it.
	go func() { v, err := g.Do(context.Background()); done <- result{v, err} }()
	f.release <- nil // ends run 1
	waitStarted(t, f, 2)
	f.release <- nil
	assert.Equal(t, result{2, nil}, <-done)
}

func TestRunIsBoundedByTimeout(t *testing.T) {
	t.Parallel()
	f := newGated()
	g := &Group[int64]{Fn: f.fn, Timeout: 50 * time.Millisecond}
	_, err := g.Do(context.Background())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	<-f.started
}

// TestWaitOutlastsTheRunsItsCallersLeft: a caller that leaves does not stop its run, and Wait
// returns only once that run has ended.
func TestWaitOutlastsTheRunsItsCallersLeft(t *testing.T) {
	t.Parallel()
	f := newGated()
	g := &Group[int64]{Fn: f.fn}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Do(ctx)
	require.ErrorIs(t, err, context.Canceled)
	waitStarted(t, f, 1)

	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while a run was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	f.release <- nil
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the run ended")
	}
}
