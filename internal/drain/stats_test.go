package drain_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
)

// TestDailyStatsStayExactWithRedeliveryAndSeveralDrains runs three drains on one queue with a
// sink that, for every other batch, commits it and then fails as if the acknowledgement were
// lost, so the drain writes the same batch again. The daily stats must count each produced
// event once: computed here from the events themselves, not from the log.
func TestDailyStatsStayExactWithRedeliveryAndSeveralDrains(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 2*time.Second)
	var calls, redelivered atomic.Int64
	errLostAck := errors.New("acknowledgement lost")
	lossy := sinkFunc(func(ctx context.Context, events []event.Event) error {
		if err := e.writer.WriteBatch(ctx, events); err != nil {
			return err
		}
		if calls.Add(1)%2 == 0 {
			redelivered.Add(1)
			return errLostAck
		}
		return nil
	})
	var rs []*running
	for _, w := range []string{"w1", "w2", "w3"} {
		cfg := e.config(w)
		cfg.BatchSize = 70
		rs = append(rs, e.start(lossy, cfg))
	}
	type key struct {
		popupID int64
		action  event.Action
	}
	want := map[key]int64{}
	var ids []string
	for i := range 6 {
		ids = append(ids, e.produce("st", i*500, 500)...)
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 3000 {
		ev := mkEvent("st", i)
		want[key{ev.PopupID, ev.Action}]++
	}

	e.waitLog(3000, 30*time.Second)
	for _, r := range rs {
		r.stop(t)
	}
	e.requireExactlyOnce(ids)
	require.Positive(t, redelivered.Load(), "batches were written twice")

	rows, err := e.db.Query(`SELECT popup_id, DATE_FORMAT(day, '%Y-%m-%d'), impressions, clicks, closes FROM popup_daily_stats`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[key]int64{}
	for rows.Next() {
		var id, imp, clk, cls int64
		var day string
		require.NoError(t, rows.Scan(&id, &day, &imp, &clk, &cls))
		assert.Equal(t, t0.Format(time.DateOnly), day)
		got[key{id, event.Impression}] += imp
		got[key{id, event.Click}] += clk
		got[key{id, event.Close}] += cls
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, want, got, "each event counted once")
}
