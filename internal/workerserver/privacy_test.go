package workerserver

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
	"popupsvc/internal/testenv"
)

// TestErasureCollectorReportsTheOldestPendingErasure: the gauges the erasure alert watches count
// the pending erasures only (a done one is not) and age the oldest of them.
func TestErasureCollectorReportsTheOldestPendingErasure(t *testing.T) {
	t.Parallel()
	repo := mysqlstore.NewPrivacyRepo(testenv.MySQL(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newErasureCollector(repo.Pending, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.now = func() time.Time { return t0.Add(2 * time.Minute) }
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	gauges := func() map[string]float64 {
		families, err := reg.Gather()
		require.NoError(t, err)
		got := map[string]float64{}
		for _, f := range families {
			got[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
		}
		return got
	}
	assert.Equal(t, map[string]float64{"popup_erasures_pending": 0, "popup_erasure_oldest_pending_age_seconds": 0}, gauges(), "none pending")

	actor := popup.Actor{Name: "test", Role: popup.RoleAdmin}
	requests := []privacy.Request{
		{ID: strings.Repeat("a", 32), UIDHash: "h-done", Sealed: []byte{1}, At: t0.Add(-time.Hour), Actor: actor},
		{ID: strings.Repeat("b", 32), UIDHash: "h-old", Sealed: []byte{1}, At: t0, Actor: actor},
		{ID: strings.Repeat("c", 32), UIDHash: "h-new", Sealed: []byte{1}, At: t0.Add(time.Minute), Actor: actor},
	}
	for _, q := range requests {
		_, err := repo.Request(ctx, q)
		require.NoError(t, err)
	}
	require.NoError(t, repo.Finish(ctx, requests[0].ID, map[string]int64{}, t0))
	assert.Equal(t, map[string]float64{"popup_erasures_pending": 2, "popup_erasure_oldest_pending_age_seconds": 120}, gauges(),
		"two pending, the oldest 2 minutes old")
}
