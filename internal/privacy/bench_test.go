package privacy_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// BenchmarkEraseUserWith10000Actions times one erasure, as popup-worker runs it (Eraser.RunOnce
// on the real MariaDB and Redis), of a user with 10,000 action-log rows, state rows of 50 popups
// and 100 event-id markers, beside 20,000 rows of other users. The erasure's two fixed waits are
// in the figure: Settle (redisstore.StateLoadTimeout) and the tombstone's ClockSkew.
func BenchmarkEraseUserWith10000Actions(b *testing.B) {
	db := testenv.MySQL(b)
	rdb := testenv.Redis(b)
	keys := redisstore.Keys{Prefix: testenv.RedisPrefix(b), Shards: 1}
	ctx := context.Background()
	keyed, err := privacy.NewKeyed("bench-privacy-key-0123456789abcdef0123456789")
	require.NoError(b, err)
	writer := mysqlstore.NewEventWriter(db)
	repo := mysqlstore.NewPrivacyRepo(db)
	eraser := &privacy.Eraser{Store: repo, Cache: redisstore.NewEraser(rdb, keys), Keyed: keyed, Now: time.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "bench", Lease: time.Minute, Poll: time.Second,
		Settle: redisstore.StateLoadTimeout, Drained: 10 * time.Second}
	at := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)
	events := func(uid string, n int) {
		batch := make([]event.Event, 0, 500)
		for i := range n {
			batch = append(batch, event.Event{ID: "ev-" + strconv.Itoa(i), UID: uid, PopupID: int64(1 + i%50), Action: event.Impression,
				At: at.Add(time.Duration(i) * time.Millisecond), NextShowAt: at.Add(time.Hour), Impressions: 1 + i/50})
			if len(batch) == cap(batch) || i == n-1 {
				require.NoError(b, writer.WriteBatch(ctx, batch))
				batch = batch[:0]
			}
		}
	}
	for i := range 2 {
		events("other-"+strconv.Itoa(i), 10_000)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		uid := "bench-erase-" + strconv.Itoa(i)
		events(uid, 10_000)
		require.NoError(b, rdb.Set(ctx, keys.User(uid), "x", time.Hour).Err())
		for j := range 100 {
			require.NoError(b, rdb.Set(ctx, keys.EventID(uid, "ev-"+strconv.Itoa(j)), "1", time.Hour).Err())
		}
		_, err := eraser.Request(ctx, popup.Actor{Name: "bench", Role: popup.RoleAdmin}, uid)
		require.NoError(b, err)
		b.StartTimer()
		start := time.Now()
		did, err := eraser.RunOnce(ctx)
		took := time.Since(start)
		b.StopTimer()
		require.NoError(b, err)
		require.True(b, did)
		var left int
		require.NoError(b, db.QueryRow(`SELECT COUNT(*) FROM popup_action_log WHERE uid = ?`, uid).Scan(&left))
		require.Zero(b, left)
		b.ReportMetric(took.Seconds(), "s/erasure")
		b.StartTimer()
	}
}
