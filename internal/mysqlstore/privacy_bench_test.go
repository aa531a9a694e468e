package mysqlstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/privacy"
	"popupsvc/internal/testenv"
)

// BenchmarkWriteBatchTombstones is the price of the erasure's tombstone check
// (docs/CONTRACT.md §12) on the worker's batch: each iteration writes one batch of 500 new events
// (300 users, 10 popups) without the check and one with it (1,000 tombstones of other users in the
// table), alternating, so that both see the same machine. It reports each one's time per batch.
//
//	go test -run '^$' -bench BenchmarkWriteBatchTombstones -benchtime 200x ./internal/mysqlstore/
func BenchmarkWriteBatchTombstones(b *testing.B) {
	ctx := context.Background()
	db := testenv.MySQL(b)
	keyed, err := privacy.NewKeyed("bench-privacy-key-0123456789abcdef0123456789")
	require.NoError(b, err)
	repo := mysqlstore.NewPrivacyRepo(db)
	for i := range 1000 {
		require.NoError(b, repo.Tombstone(ctx, keyed.UID("erased-"+strconv.Itoa(i)), time.Now().Add(time.Hour)))
	}
	plain, checked := mysqlstore.NewEventWriter(db), mysqlstore.NewEventWriter(db)
	checked.Erased = keyed
	at := time.Now().Truncate(time.Millisecond)
	batch := func(n int) []event.Event {
		evs := make([]event.Event, 500)
		for i := range evs {
			evs[i] = event.Event{ID: "b" + strconv.Itoa(n) + "-" + strconv.Itoa(i), UID: "user-" + strconv.Itoa(i%300), PopupID: int64(1 + i%10),
				Action: event.Impression, At: at.Add(time.Duration(n*500+i) * time.Millisecond), NextShowAt: at.Add(time.Hour), Impressions: 1}
		}
		return evs
	}
	var off, on time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j, w := range []struct {
			writer *mysqlstore.EventWriter
			total  *time.Duration
		}{{plain, &off}, {checked, &on}} {
			evs := batch(2*i + j) // new events every time
			start := time.Now()
			require.NoError(b, w.writer.WriteBatch(ctx, evs))
			*w.total += time.Since(start)
		}
	}
	b.ReportMetric(float64(off.Microseconds())/float64(b.N), "µs/batch-unchecked")
	b.ReportMetric(float64(on.Microseconds())/float64(b.N), "µs/batch-checked")
}
