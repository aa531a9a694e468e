package workerserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
)

func TestMaintainLoopRunsAtOnceThenOnItsTickerAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	r := newLogRetention(nil, 24*time.Hour, nil, 0, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int64
	r.maintain = func(_ context.Context, now, cutoff time.Time) (mysqlstore.Maintenance, error) {
		assert.Equal(t, 24*time.Hour, now.Sub(cutoff), "the cutoff is the retention before now")
		if runs.Add(1) == 2 {
			return mysqlstore.Maintenance{Dropped: []string{"p20260101"}}, errors.New("MySQL went away") // logged; the loop keeps going
		}
		return mysqlstore.Maintenance{Dropped: []string{"p20250101", "p20250102"}}, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.maintainLoop(ctx, 20*time.Millisecond)
	}()
	require.Eventually(t, func() bool { return runs.Load() >= 4 }, 5*time.Second, 5*time.Millisecond, "runs again after a failed run")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("maintainLoop did not stop with its context")
	}
	// maintainLoop runs maintain on its own goroutine only: once it has returned, no run follows.
	n := runs.Load()
	var m dto.Metric
	require.NoError(t, r.dropped.Write(&m))
	assert.Equal(t, float64(2*n-1), m.GetCounter().GetValue(), "every dropped day is counted, a failed run's too")
}
