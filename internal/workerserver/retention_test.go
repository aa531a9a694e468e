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

// TestMaintainedIsSetOnlyByARunThatWentThrough: popup_worker_action_log_maintained_timestamp_seconds
// (what the retention alert watches) moves on a run that dropped what was due, not on a failed
// run nor one skipped because another worker held the lock.
func TestMaintainedIsSetOnlyByARunThatWentThrough(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give error
		skip bool
		want bool
	}{
		{name: "failed", give: errors.New("MySQL went away"), want: false},
		{name: "skipped", skip: true, want: false},
		{name: "through", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newLogRetention(nil, 24*time.Hour, nil, 0, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
			ctx, cancel := context.WithCancel(context.Background())
			r.maintain = func(context.Context, time.Time, time.Time) (mysqlstore.Maintenance, error) {
				cancel() // one run
				return mysqlstore.Maintenance{Skipped: tt.skip}, tt.give
			}
			before := time.Now()
			r.maintainLoop(ctx, time.Hour)
			var m dto.Metric
			require.NoError(t, r.maintained.Write(&m))
			got := m.GetGauge().GetValue()
			if !tt.want {
				assert.Zero(t, got)
				return
			}
			assert.GreaterOrEqual(t, got, float64(before.UnixNano())/1e9)
			assert.LessOrEqual(t, got, float64(time.Now().UnixNano())/1e9)
		})
	}
}
