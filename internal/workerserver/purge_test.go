package workerserver

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
)

func TestPurgeLoopRunsAtOnceThenOnItsTickerAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		purgeLoop(ctx, 20*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context) (int64, error) {
			if runs.Add(1) == 2 {
				return 3, errors.New("MySQL went away") // logged; the loop keeps going
			}
			return 5, nil
		})
	}()
	require.Eventually(t, func() bool { return runs.Load() >= 4 }, 5*time.Second, 5*time.Millisecond, "runs again after a failed purge")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("purgeLoop did not stop with its context")
	}
	n := runs.Load()
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, n, runs.Load(), "no purge after the stop")
}
