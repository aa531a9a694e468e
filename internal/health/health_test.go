package health

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/backoff"
)

func newDep(check func(context.Context) error) *Dep {
	return &Dep{Name: "x", Check: check, Every: time.Hour, Timeout: time.Second,
		Backoff: backoff.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestDepRetriesUntilUpThenReportsUp(t *testing.T) {
	t.Parallel()
	var calls, ups atomic.Int32
	d := newDep(func(context.Context) error {
		if calls.Add(1) < 5 {
			return errors.New("refused")
		}
		return nil
	})
	d.OnUp = func() { ups.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	select {
	case <-d.FirstUp():
	case <-time.After(5 * time.Second):
		t.Fatal("never up")
	}
	cancel()

	require.NoError(t, <-done)
	assert.True(t, d.Up())
	assert.EqualValues(t, 5, calls.Load(), "four failed checks, then the one that succeeded")
	assert.EqualValues(t, 1, ups.Load())
}

func TestDepFailedMarksDownAndChecksAgain(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	d := newDep(func(context.Context) error { calls.Add(1); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Run(ctx) }()
	<-d.FirstUp()

	d.Failed()

	require.Eventually(t, func() bool { return calls.Load() == 2 && d.Up() }, 5*time.Second, time.Millisecond,
		"a failure reported by a caller is checked at once, not after Every")
}

func TestDepReturnsAFatalError(t *testing.T) {
	t.Parallel()
	fatal := errors.New("schema is newer")
	d := newDep(func(context.Context) error { return fatal })
	d.Fatal = func(err error) bool { return errors.Is(err, fatal) }

	err := d.Run(context.Background())

	assert.ErrorIs(t, err, fatal)
	assert.False(t, d.Up())
}

func TestDepIsNeitherUpNorDownBeforeItsFirstCheck(t *testing.T) {
	t.Parallel()
	d := newDep(func(context.Context) error { return errors.New("refused") })
	assert.False(t, d.Up())
	assert.False(t, d.Down())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Run(ctx) }()

	require.Eventually(t, d.Down, 5*time.Second, time.Millisecond)
}
