package mysqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/popup"
	"popupsvc/internal/testenv"
)

// TestUserStateLoadsTodaysCountFromTheStateRows: the daily cap's count comes back with the state
// in one statement: the largest count carried by today's impressions, whatever the order and
// however often a batch is written; yesterday's counts do not count today.
func TestUserStateLoadsTodaysCountFromTheStateRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	yesterday, today := t0.Add(-24*time.Hour), t0
	imp := func(id string, popupID int64, at time.Time, day int) event.Event {
		return event.Event{ID: id, UID: "u", PopupID: popupID, Action: event.Impression, At: at,
			NextShowAt: at.Add(time.Hour), Impressions: 1, DayCount: day}
	}
	// Yesterday: three impressions. Today: popup 2 (the user's 2nd of the day) is written before
	// popup 1 (the 1st), and the batch is written twice; a click carries no count.
	require.NoError(t, w.WriteBatch(ctx, []event.Event{imp("y1", 1, yesterday, 3)}))
	batch := []event.Event{
		imp("t2", 2, today.Add(time.Minute), 2),
		imp("t1", 1, today, 1),
		{ID: "c1", UID: "u", PopupID: 2, Action: event.Click, At: today.Add(2 * time.Minute)},
	}
	require.NoError(t, w.WriteBatch(ctx, batch))
	require.NoError(t, w.WriteBatch(ctx, batch))

	l := mysqlstore.NewUserStateLoader(db)
	st, err := l.Load(ctx, "u", today.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 2, st.ImpressionsOn(today.Add(time.Hour)))
	assert.Len(t, st.Popups, 2)
	assert.Equal(t, today.Add(2*time.Minute), st.Popups.Get(2).LastClickAt)

	st, err = l.Load(ctx, "u", today.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Zero(t, st.ImpressionsOn(today.Add(24*time.Hour)), "a new day starts at zero")

	// An impression of yesterday arriving late moves nothing back.
	require.NoError(t, w.WriteBatch(ctx, []event.Event{imp("y2", 2, yesterday.Add(time.Minute), 4)}))
	st, err = l.Load(ctx, "u", today.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 2, st.ImpressionsOn(today.Add(time.Hour)))

	st, err = l.Load(ctx, "nobody", today)
	require.NoError(t, err)
	assert.Equal(t, popup.UserState{}, st)
}
