package results_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
)

type expZoneDay struct {
	Day          string `json:"day"`
	TimeZone     string `json:"time_zone"`
	Arm          string `json:"arm"`
	ExposedUsers int64  `json:"exposed_users"`
	Exposures    int64  `json:"exposures"`
	ClickedUsers int64  `json:"clicked_users"`
	Clicks       int64  `json:"clicks"`
}

// TestExperimentDaysInTheTeamsZone: with the team reporting in Asia/Kolkata (UTC+05:30), an
// experiment's days are Kolkata days: two users exposed ten minutes either side of local midnight
// (one UTC day) fall on two days, and a user's first click on its own day; `tz` asks another zone;
// a UTC day counted before quarter hours (popup_experiment_daily) is answered as a UTC day.
func TestExperimentDaysInTheTeamsZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := apitest.Config(t)
	api := apitest.Start(t, cfg, apitest.NewClock())
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	require.NoError(t, err)
	defer db.Close()

	id := api.CreatePopup(t, map[string]any{"name": "zoned", "status": "draft", "experiment": map[string]any{
		"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}})
	res := api.AdminDo(t, http.MethodGet, fmt.Sprintf("/admin/v1/popups/%d", id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	salt := res.Body["experiment"].(map[string]any)["salt"].(string)
	res = api.AdminDo(t, http.MethodPut, "/admin/v1/settings", map[string]any{"reporting_time_zone": "Asia/Kolkata"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)

	ev := func(evID, uid string, a event.Action, at string) event.Event {
		ts, err := time.Parse(time.RFC3339, at)
		require.NoError(t, err)
		return event.Event{ID: evID, UID: uid, PopupID: id, Action: a, At: ts, NextShowAt: ts, Impressions: 1,
			Arms: []event.ArmRef{{PopupID: id, Salt: salt, Arm: "a"}}}
	}
	require.NoError(t, mysqlstore.NewEventWriter(db).WriteBatch(ctx, []event.Event{
		ev("x1", "k1", event.Impression, "2026-11-20T18:20:00Z"), // 23:50 on 11-20 in Kolkata
		ev("x2", "k2", event.Impression, "2026-11-20T18:40:00Z"), // 00:10 on 11-21
		ev("c1", "k1", event.Click, "2026-11-20T18:35:00Z"),      // k1's first click: 00:05 on 11-21
	}))
	_, err = db.ExecContext(ctx, `INSERT INTO popup_experiment_daily (popup_id, salt, arm, day, exposed_users, exposures) VALUES (?, ?, 'a', '2026-11-18', 4, 4)`,
		id, salt)
	require.NoError(t, err)

	get := func(query string) (string, []expZoneDay) {
		res := api.AdminDo(t, http.MethodGet, fmt.Sprintf("/admin/v1/popups/%d/experiment/results%s", id, query), nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		var out struct {
			TimeZone string       `json:"time_zone"`
			Days     []expZoneDay `json:"days"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Raw), &out))
		return out.TimeZone, out.Days
	}
	zone, days := get("")
	assert.Equal(t, "Asia/Kolkata", zone, "the team's zone by default")
	assert.Equal(t, []expZoneDay{
		{Day: "2026-11-18", TimeZone: "UTC", Arm: "a", ExposedUsers: 4, Exposures: 4},
		{Day: "2026-11-20", TimeZone: "Asia/Kolkata", Arm: "a", ExposedUsers: 1, Exposures: 1},
		{Day: "2026-11-21", TimeZone: "Asia/Kolkata", Arm: "a", ExposedUsers: 1, Exposures: 1, ClickedUsers: 1, Clicks: 1},
	}, days)

	zone, days = get("?tz=UTC")
	assert.Equal(t, "UTC", zone)
	assert.Equal(t, []expZoneDay{
		{Day: "2026-11-18", TimeZone: "UTC", Arm: "a", ExposedUsers: 4, Exposures: 4},
		{Day: "2026-11-20", TimeZone: "UTC", Arm: "a", ExposedUsers: 2, Exposures: 2, ClickedUsers: 1, Clicks: 1},
	}, days)

	res = api.AdminDo(t, http.MethodGet, fmt.Sprintf("/admin/v1/popups/%d/experiment/results?tz=Mars/Olympus", id), nil)
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	assert.Contains(t, res.Raw, `"field":"tz"`)
}
