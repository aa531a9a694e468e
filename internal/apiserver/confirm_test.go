package apiserver_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/decide"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// Impressions when shown (docs/CONTRACT.md §2): a decision asked for with confirm=1 counts only
// once the client posts its impression, through the real API, Redis and MariaDB.

const confirmQuery = "platform=ios&app_version=1&confirm=1&uid="

// userImpressions is what the admin's view of uid's state says: impressions of each popup and
// of the day.
func userImpressions(t *testing.T, api *instance, uid string) (map[int64]int, int) {
	t.Helper()
	res := api.adminDo(t, http.MethodGet, "/admin/v1/users/"+uid+"/state", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	byPopup := map[int64]int{}
	popups, _ := res.Body["popups"].([]any)
	for _, p := range popups {
		m := p.(map[string]any)
		n, _ := m["impressions"].(float64)
		byPopup[int64(m["popup_id"].(float64))] = int(n)
	}
	today, _ := res.Body["impressions_today"].(float64)
	return byPopup, int(today)
}

func TestConfirmedImpressionCountsOnceWhenConfirmed(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	_, api, db := startWithWorker(t)
	ctx := context.Background()
	id := api.createPopup(t, popupSpec("confirmed", map[string]any{"reshow_after_seconds": 3600}))

	got, res := api.get(t, confirmQuery+"c1")
	require.Equal(t, id, got)
	decision, _ := res.Body["decision_id"].(string)
	require.NotEmpty(t, decision)
	byPopup, today := userImpressions(t, api, "c1")
	assert.Zero(t, byPopup[id], "a reserved decision is no impression yet")
	assert.Zero(t, today)
	got, _ = api.get(t, confirmQuery+"c1")
	assert.Zero(t, got, "while the reservation is pending the user gets nothing else")

	for i := 0; i < 3; i++ { // the client's retries
		res := api.action(t, id, map[string]any{"uid": "c1", "action": "impression", "decision_id": decision})
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	}
	byPopup, today = userImpressions(t, api, "c1")
	assert.Equal(t, 1, byPopup[id], "confirmed three times, counted once")
	assert.Equal(t, 1, today)
	got, _ = api.get(t, confirmQuery+"c1")
	assert.Zero(t, got, "confirmed: hidden for reshow_after_seconds")

	var n int
	require.Eventually(t, func() bool {
		return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE uid = 'c1' AND action = 'impression'`).Scan(&n) == nil && n > 0
	}, 10*time.Second, 20*time.Millisecond, "the impression reaches the action log")
	var eventID string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT event_id FROM popup_action_log WHERE uid = 'c1' AND action = 'impression'`).Scan(&eventID))
	assert.Equal(t, decision, eventID, "the impression is the decision's")
	res = api.adminDo(t, http.MethodGet, "/admin/v1/users/c1/state", nil)
	require.Equal(t, http.StatusOK, res.Status)
	require.Eventually(t, func() bool {
		var rows int
		return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_user_state WHERE uid = 'c1' AND impressions = 1`).Scan(&rows) == nil && rows == 1
	}, 10*time.Second, 20*time.Millisecond, "the durable state holds one impression")
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM popup_action_log WHERE uid = 'c1'`).Scan(&n))
	assert.Equal(t, 1, n, "one event in all")
}

func TestUnconfirmedReservationExpiresWithoutTrace(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := testConfig(t)
	api := start(t, cfg, nil)
	ctx := context.Background()
	rdb := testenv.Redis(t)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	id := api.createPopup(t, popupSpec("dropped", map[string]any{"reshow_after_seconds": 3600}))

	got, res := api.get(t, confirmQuery+"d1")
	require.Equal(t, id, got)
	dropped := res.Body["decision_id"].(string)
	ttl := rdb.PTTL(ctx, keys.Reservation("d1")).Val()
	assert.True(t, ttl > 0 && ttl <= decide.ReservationTTL, "the reservation expires within %s (PTTL %s)", decide.ReservationTTL, ttl)

	// The client never shows it (its budget ran out, the page went away): Redis expires it.
	require.NoError(t, rdb.PExpire(ctx, keys.Reservation("d1"), time.Millisecond).Err())
	require.Eventually(t, func() bool { return rdb.Exists(ctx, keys.Reservation("d1")).Val() == 0 },
		5*time.Second, 5*time.Millisecond)

	assert.Zero(t, rdb.LLen(ctx, keys.Queue(keys.Shard("d1"))).Val(), "nothing was queued: no trace in the results")
	byPopup, today := userImpressions(t, api, "d1")
	assert.Empty(t, byPopup, "the user's state is untouched")
	assert.Zero(t, today)
	res = api.action(t, id, map[string]any{"uid": "d1", "action": "impression", "decision_id": dropped})
	assert.Equal(t, http.StatusConflict, res.Status, res.Raw)
	assert.Equal(t, "reservation_expired", apitest.ErrCode(res), res.Raw)
	assert.Zero(t, rdb.LLen(ctx, keys.Queue(keys.Shard("d1"))).Val(), "a late confirmation counts nothing")

	got, res = api.get(t, confirmQuery+"d1")
	assert.Equal(t, id, got, "the popup can be shown again")
	assert.NotEqual(t, dropped, res.Body["decision_id"])
}

func TestConcurrentConfirmModeCallsShowOnePopup(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	api := start(t, testConfig(t), nil)
	// Two popups: without the reservation every call would show one (nothing is recorded yet).
	a := api.createPopup(t, popupSpec("race-a", map[string]any{"priority": 2}))
	b := api.createPopup(t, popupSpec("race-b", map[string]any{"priority": 1}))
	const n = 20
	var wg sync.WaitGroup
	results := make([]int64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], _ = api.get(t, confirmQuery+"racer")
		}(i)
	}
	wg.Wait()
	shown := 0
	for _, r := range results {
		if r != 0 {
			assert.Contains(t, []int64{a, b}, r)
			shown++
		}
	}
	assert.Equal(t, 1, shown, "exactly one of %d concurrent confirm-mode calls shows a popup", n)
}

func TestConfirmAfterTheStateChangedAppliesToTheNewState(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	api := start(t, testConfig(t), nil)
	a := api.createPopup(t, popupSpec("shown", map[string]any{"priority": 2, "reshow_after_seconds": 3600}))
	b := api.createPopup(t, popupSpec("clicked", map[string]any{"priority": 1}))

	got, res := api.get(t, confirmQuery+"s1")
	require.Equal(t, a, got)
	// Another device of the user clicks b meanwhile: the state the reservation was planned on is
	// gone.
	click := api.action(t, b, map[string]any{"uid": "s1", "action": "click"})
	require.Equal(t, http.StatusAccepted, click.Status, click.Raw)
	conf := api.action(t, a, map[string]any{"uid": "s1", "action": "impression", "decision_id": res.Body["decision_id"]})
	require.Equal(t, http.StatusAccepted, conf.Status, conf.Raw)

	state := api.adminDo(t, http.MethodGet, "/admin/v1/users/s1/state", nil)
	require.Equal(t, http.StatusOK, state.Status)
	byPopup, today := userImpressions(t, api, "s1")
	assert.Equal(t, 1, byPopup[a], "the impression is applied")
	assert.Equal(t, 1, today)
	assert.Contains(t, state.Raw, `"last_click_at"`, "and the click kept: %s", state.Raw)
}

func TestConfirmInputErrors(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	api := start(t, testConfig(t), nil)
	id := api.createPopup(t, popupSpec("confirm-errors", nil))
	tests := []struct {
		name     string
		give     func() response
		wantCode int
		wantErr  string
	}{
		{"a confirm flag that is not a boolean", func() response {
			return api.do(t, http.MethodGet, "http://"+api.public+"/api/v1/popup?"+"platform=ios&app_version=1&uid=e1&confirm=yes", nil, nil)
		}, http.StatusBadRequest, "invalid_confirm"},
		{"an impression without its decision id", func() response {
			return api.action(t, id, map[string]any{"uid": "e1", "action": "impression"})
		}, http.StatusBadRequest, "invalid_decision_id"},
		{"an impression with a button", func() response {
			return api.action(t, id, map[string]any{"uid": "e1", "action": "impression", "decision_id": "x", "button": 0})
		}, http.StatusBadRequest, "invalid_button"},
		{"an impression of a decision never reserved", func() response {
			return api.action(t, id, map[string]any{"uid": "e1", "action": "impression", "decision_id": "never-made"})
		}, http.StatusConflict, "reservation_expired"},
		{"an impression naming another popup than the one reserved", func() response {
			got, res := api.get(t, confirmQuery+"e2")
			require.Equal(t, id, got)
			other := api.createPopup(t, popupSpec("confirm-errors-other", nil))
			return api.action(t, other, map[string]any{"uid": "e2", "action": "impression", "decision_id": res.Body["decision_id"]})
		}, http.StatusConflict, "reservation_expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.give()
			assert.Equal(t, tt.wantCode, res.Status, res.Raw)
			assert.Equal(t, tt.wantErr, apitest.ErrCode(res), res.Raw)
		})
	}
}
