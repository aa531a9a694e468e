package mysqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/report"
	"popupsvc/internal/testenv"
)

// TestExperimentDaysFollowTheZone: a phase's days are the asked zone's, summed from quarter hours
// (Asia/Kolkata is UTC+05:30, so its midnight falls inside a UTC hour): events either side of
// local midnight land on their local days, though they share a UTC day; a user counts as
// exposed, or as clicking, on the day of the first time only. The UTC days kept from before the
// quarter hours are answered as UTC days, apart from the zone's days, and summed into the days
// when the days asked are UTC's.
func TestExperimentDaysFollowTheZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.MySQL(t)
	w := mysqlstore.NewEventWriter(db)
	arm := []event.ArmRef{{PopupID: 1, Salt: "s", Arm: "a"}}
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return ts
	}
	ev := func(id, uid string, a event.Action, when string) event.Event {
		ts := at(when)
		return event.Event{ID: id, UID: uid, PopupID: 1, Action: a, At: ts, NextShowAt: ts.Add(time.Hour), Impressions: 1, Arms: arm}
	}
	require.NoError(t, w.WriteBatch(ctx, []event.Event{
		ev("i1", "u1", event.Impression, "2026-03-01T18:20:00Z"), // 23:50 on 03-01 in Kolkata
		ev("i2", "u2", event.Impression, "2026-03-01T18:40:00Z"), // 00:10 on 03-02 there
		ev("c1", "u1", event.Click, "2026-03-01T18:35:00Z"),      // u1's first click: 00:05 on 03-02
		ev("i3", "u1", event.Impression, "2026-03-01T18:50:00Z"), // u1 again: an exposure, not a user
		ev("c2", "u1", event.Click, "2026-03-01T19:00:00Z"),      // a second click: not a clicking user again
	}))
	_, err := db.ExecContext(ctx, `INSERT INTO popup_experiment_daily (popup_id, salt, arm, day, exposed_users, exposures, clicked_users, clicks, closes)
		VALUES (1, 's', 'a', '2026-02-27', 5, 6, 1, 1, 2), (1, 's', 'a', '2026-03-01', 3, 3, 0, 0, 0)`)
	require.NoError(t, err)
	stats := mysqlstore.NewStatsRepo(db)
	tests := []struct {
		zone string
		want []report.ExperimentDay
	}{
		{zone: "Asia/Kolkata", want: []report.ExperimentDay{
			{Day: "2026-02-27", Zone: "UTC", Arm: "a", ExposedUsers: 5, Exposures: 6, ClickedUsers: 1, Clicks: 1, Closes: 2},
			{Day: "2026-03-01", Zone: "UTC", Arm: "a", ExposedUsers: 3, Exposures: 3},
			{Day: "2026-03-01", Zone: "Asia/Kolkata", Arm: "a", ExposedUsers: 1, Exposures: 1},
			{Day: "2026-03-02", Zone: "Asia/Kolkata", Arm: "a", ExposedUsers: 1, Exposures: 2, ClickedUsers: 1, Clicks: 2},
		}},
		{zone: "UTC", want: []report.ExperimentDay{
			{Day: "2026-02-27", Zone: "UTC", Arm: "a", ExposedUsers: 5, Exposures: 6, ClickedUsers: 1, Clicks: 1, Closes: 2},
			{Day: "2026-03-01", Zone: "UTC", Arm: "a", ExposedUsers: 5, Exposures: 6, ClickedUsers: 1, Clicks: 2},
		}},
		{zone: "America/Los_Angeles", want: []report.ExperimentDay{
			{Day: "2026-02-27", Zone: "UTC", Arm: "a", ExposedUsers: 5, Exposures: 6, ClickedUsers: 1, Clicks: 1, Closes: 2},
			{Day: "2026-03-01", Zone: "UTC", Arm: "a", ExposedUsers: 3, Exposures: 3},
			{Day: "2026-03-01", Zone: "America/Los_Angeles", Arm: "a", ExposedUsers: 2, Exposures: 3, ClickedUsers: 1, Clicks: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			days, err := stats.ExperimentDays(ctx, 1, "s", mustZone(t, tt.zone))
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.want, days)
		})
	}
	none, err := stats.ExperimentDays(ctx, 1, "other", time.UTC)
	require.NoError(t, err)
	assert.Empty(t, none, "a phase without counts has no days")
}
