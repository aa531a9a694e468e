package users_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
	"popupsvc/internal/privacy"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// The erasure and export of a user (docs/CONTRACT.md §12), through the real popup-api and
// popup-worker, MariaDB and Redis.

func TestErasureLeavesNoTraceOfTheUser(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := apitest.PrivacyConfig(t)
	api := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	db := apitest.DB(t, cfg)
	rdb := testenv.Redis(t)
	ctx := context.Background()
	const uid = "erase-me.7f3a"

	// The user is in an audience, sees a popup of a running experiment that targets it, and clicks.
	aud := api.CreateAudience(t, "privacy-vips")
	status, _, raw := api.Send(t, apitest.Token, http.MethodPost, "/admin/v1/audiences/"+aud+"/members/add", "text/plain",
		strings.NewReader(uid+"\nsomeone-else\n"))
	require.Equal(t, http.StatusOK, status, raw)
	id := api.CreatePopup(t, apitest.PopupSpec("privacy", map[string]any{
		"targeting":  map[string]any{"audiences": map[string]any{"include": []any{json.Number(aud)}}},
		"experiment": map[string]any{"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}},
	}))

	res := api.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var shown apitest.Response
	apitest.Eventually(t, 15*time.Second, "the popup is shown to the audience's member", func() bool {
		var got int64
		got, shown = api.Get(t, "uid="+uid+"&platform=ios&app_version=8.10.0")
		return got == id
	})

	click := map[string]any{"uid": uid, "action": "click", "event_id": "ev-click-1", "decision_id": shown.Body["decision_id"]}
	res = api.Action(t, id, click)
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	apitest.Eventually(t, 15*time.Second, "the worker writes the impression and the click", func() bool {
		return apitest.Count(t, db, `SELECT COUNT(*) FROM popup_action_log WHERE uid = ?`, uid) == 2 &&
			apitest.Count(t, db, `SELECT COUNT(*) FROM popup_experiment_user WHERE uid = ?`, uid) == 1
	})

	// The export holds all of it.
	res = api.AdminDo(t, http.MethodGet, "/admin/v1/users/"+uid+"/export", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, uid, res.Body["uid"])
	assert.Len(t, res.Body["state"], 1, res.Raw)
	assert.Len(t, res.Body["actions"], 2, res.Raw)
	assert.Len(t, res.Body["experiments"], 1, res.Raw)
	assert.Len(t, res.Body["audiences"], 1, res.Raw)
	assert.Equal(t, []any{}, res.Body["conversions"])

	done := api.Erase(t, uid)
	removed, _ := done["removed"].(map[string]any)
	assert.EqualValues(t, 2, removed[privacy.StoreActionLog], done)
	assert.EqualValues(t, 1, removed[privacy.StoreUserState], done)
	assert.EqualValues(t, 1, removed[privacy.StoreExperimentUser], done)
	assert.EqualValues(t, 1, removed[privacy.StoreAudiences], done)
	assert.EqualValues(t, 1, removed[privacy.StoreAudienceUploads], done)
	assert.EqualValues(t, 0, removed[privacy.StoreRedisMarkers], done, "markers name no uid: they stay, and refuse a retry")
	assert.NotZero(t, removed[privacy.StoreRedisState], done)

	// The audience has a new version without the uid, made by the erasure; the others stay.
	assert.Equal(t, []string{"someone-else"}, api.Members(t, aud))
	status, hist, raw := api.Send(t, apitest.Token, http.MethodGet, "/admin/v1/audiences/"+aud+"/history", "", nil)
	require.Equal(t, http.StatusOK, status, raw)
	last := hist["changes"].([]any)[0].(map[string]any)
	assert.Equal(t, "(erasure)", last["actor"])
	assert.Equal(t, "remove", last["action"])
	assert.EqualValues(t, 1, last["removed"])

	// A retry of the click of before the erasure is accepted as a duplicate and writes nothing,
	// not even the user's state in Redis.
	res = api.Action(t, id, click)
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	assert.Zero(t, rdb.Exists(ctx, keys.User(uid)).Val(), "the retry wrote the user's state")
	assert.Zero(t, rdb.LLen(ctx, keys.Queue(keys.Shard(uid))).Val(), "the retry queued an event")

	// An export after the erasure finds nothing and writes nothing.
	res = api.AdminDo(t, http.MethodGet, "/admin/v1/users/"+uid+"/export", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	for _, list := range []string{"state", "actions", "experiments", "audiences"} {
		assert.Equal(t, []any{}, res.Body[list], list)
	}

	// The independent check: no table, no Redis key or value holds the uid.
	traces, err := testenv.Traces(ctx, db, rdb, cfg.RedisPrefix, uid)
	require.NoError(t, err)
	assert.Empty(t, traces, "the uid is still stored")
	// The audit record holds the keyed hash, not the uid.
	keyed, err := privacy.NewKeyed(apitest.PrivacyKey)
	require.NoError(t, err)
	assert.Equal(t, 1, apitest.Count(t, db, `SELECT COUNT(*) FROM privacy_erasure WHERE uid_hash = ? AND status = 'done'
		AND sealed_uid IS NULL AND requested_by = 'admin'`, keyed.UID(uid)))

	// A new visit after the erasure is a new user: the popup shows again at once (its reshow
	// interval held the old user's state), and its impression is written.
	got, _ := api.Get(t, "uid="+uid+"&platform=ios&app_version=8.10.0")
	assert.Zero(t, got, "the audience no longer has the user")
	other := api.CreatePopup(t, apitest.PopupSpec("privacy-open", nil))
	apitest.Eventually(t, 15*time.Second, "the new user is shown the open popup", func() bool {
		got, _ := api.Get(t, "uid="+uid+"&platform=ios&app_version=8.10.0")
		return got == other
	})

	apitest.Eventually(t, 15*time.Second, "the new user's impression is written", func() bool {
		return apitest.Count(t, db, `SELECT COUNT(*) FROM popup_action_log WHERE uid = ?`, uid) == 1
	})

}

// TestAnEventQueuedBeforeTheErasureIsNotWritten holds the user's events in a worker's hands (a
// claimed batch) across the erasure: the erasure waits for it, and the batch, written after the
// tombstone, drops them.
func TestAnEventQueuedBeforeTheErasureIsNotWritten(t *testing.T) {
	t.Parallel()
	testenv.RedisFacing(t)
	cfg := apitest.PrivacyConfig(t)
	api := apitest.Start(t, cfg, nil) // no worker: the test plays it
	db := apitest.DB(t, cfg)
	rdb := testenv.Redis(t)
	ctx := context.Background()
	const uid = "queued-then-erased"

	id := api.CreatePopup(t, apitest.PopupSpec("privacy-queued", nil))
	apitest.Eventually(t, 15*time.Second, "the popup is served", func() bool {
		got, _ := api.Get(t, "uid="+uid+"&platform=ios&app_version=8.10.0")
		return got == id
	})

	res := api.Action(t, id, map[string]any{"uid": uid, "action": "close", "event_id": "ev-close-1"})
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	queue := redisstore.NewQueue(rdb, keys, time.Minute)
	shard := keys.Shard(uid)
	raws, err := queue.Claim(ctx, shard, "held-worker", 100)
	require.NoError(t, err)
	require.Len(t, raws, 2, "the impression and the close are queued")
	batch := make([]event.Event, len(raws))
	for i, raw := range raws {
		batch[i], err = event.Decode([]byte(raw))
		require.NoError(t, err)
	}

	keyed, err := privacy.NewKeyed(apitest.PrivacyKey)
	require.NoError(t, err)
	repo := mysqlstore.NewPrivacyRepo(db)
	eraser := &privacy.Eraser{Store: repo, Cache: redisstore.NewEraser(rdb, keys), Keyed: keyed, Now: time.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "test-eraser", Lease: 30 * time.Second,
		Poll: time.Second, Settle: 10 * time.Millisecond, Drained: 20 * time.Second}
	res = api.AdminDo(t, http.MethodDelete, "/admin/v1/users/"+uid, nil)
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	erased := make(chan error, 1)
	go func() {
		_, err := eraser.RunOnce(ctx)
		erased <- err
	}()
	apitest.Eventually(t, 15*time.Second, "the tombstone is set", func() bool {
		return apitest.Count(t, db, `SELECT COUNT(*) FROM privacy_tombstone WHERE uid_hash = ?`, keyed.UID(uid)) == 1
	})

	select {
	case err := <-erased:
		t.Fatalf("the erasure finished while a worker held the user's events: %v", err)
	case <-time.After(300 * time.Millisecond):
	}

	// The held worker writes its batch now, as the drain would, and acknowledges it.
	writer := mysqlstore.NewEventWriter(db)
	writer.Erased = keyed
	dropped := 0
	writer.OnErased = func(n int) { dropped += n }
	require.NoError(t, writer.WriteBatch(ctx, batch))
	require.NoError(t, queue.Ack(ctx, shard, "held-worker", len(raws)))
	assert.Equal(t, 2, dropped)
	select {
	case err := <-erased:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the erasure did not finish once the batch was written")
	}
	assert.Zero(t, apitest.Count(t, db, `SELECT COUNT(*) FROM popup_action_log WHERE uid = ?`, uid))
	assert.Zero(t, apitest.Count(t, db, `SELECT COUNT(*) FROM popup_user_state WHERE uid = ?`, uid))
	assert.Zero(t, apitest.Count(t, db, `SELECT COUNT(*) FROM popup_daily_stats`), "dropped events are not counted either")
	traces, err := testenv.Traces(ctx, db, rdb, cfg.RedisPrefix, uid)
	require.NoError(t, err)
	assert.Empty(t, traces)

	// A new visit is a new user's: the popup's reshow interval (a day) no longer hides it.
	got, _ := api.Get(t, "uid="+uid+"&platform=ios&app_version=8.10.0")
	assert.Equal(t, id, got, "the erased impression still hides the popup")
}

func TestErasureAPI(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t) // no POPUP_PRIVACY_KEY
	cfg.AdminTokens = []string{"pat@publisher:tok-publisher"}
	api := apitest.Start(t, cfg, nil)

	tests := []struct {
		name       string
		tok        string
		method     string
		path       string
		wantStatus int
		wantCode   string
	}{
		{"erasures are off without a key", apitest.Token, http.MethodDelete, "/admin/v1/users/u1", http.StatusNotImplemented, "erasure_not_configured"},
		{"an erasure is an admin's", "tok-publisher", http.MethodDelete, "/admin/v1/users/u1", http.StatusForbidden, "forbidden"},
		{"an export is an admin's", "tok-publisher", http.MethodGet, "/admin/v1/users/u1/export", http.StatusForbidden, "forbidden"},
		{"a status is an admin's", "tok-publisher", http.MethodGet, "/admin/v1/erasures/0123456789abcdef0123456789abcdef", http.StatusForbidden, "forbidden"},
		{"a bad uid", apitest.Token, http.MethodDelete, "/admin/v1/users/bad%20uid", http.StatusBadRequest, "invalid_uid"},
		{"a bad uid to export", apitest.Token, http.MethodGet, "/admin/v1/users/bad%20uid/export", http.StatusBadRequest, "invalid_uid"},
		{"a bad erasure id", apitest.Token, http.MethodGet, "/admin/v1/erasures/nope", http.StatusBadRequest, "invalid_erasure_id"},
		{"an unknown erasure", apitest.Token, http.MethodGet, "/admin/v1/erasures/0123456789abcdef0123456789abcdef", http.StatusNotFound, "erasure_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, raw := api.Send(t, tt.tok, tt.method, tt.path, "", nil)
			require.Equal(t, tt.wantStatus, status, raw)
			e, _ := body["error"].(map[string]any)
			assert.Equal(t, tt.wantCode, e["code"], raw)
			assert.NotContains(t, raw, "u1", "an answer never names the uid")
		})
	}
}

// TestPrivacyAnswersMatchOpenAPI validates the answers of the privacy routes, good and bad,
// against api/openapi.yaml.
func TestPrivacyAnswersMatchOpenAPI(t *testing.T) {
	t.Parallel()
	cfg := apitest.PrivacyConfig(t)
	cfg.AdminTokens = []string{"vera@viewer:tok-viewer"}
	api := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	off := apitest.Start(t, apitest.Config(t), nil) // no POPUP_PRIVACY_KEY
	s := apitest.NewSpecChecker(t, api.Admin, off.Admin)
	adm := "http://" + api.Admin
	auth := map[string]string{"Authorization": "Bearer " + apitest.Token}
	viewer := map[string]string{"Authorization": "Bearer tok-viewer"}

	_, body, _ := s.Do(t, apitest.Call{Name: "erase", Method: http.MethodDelete, URL: adm + "/admin/v1/users/oa-erase", Header: auth,
		Want: []int{http.StatusAccepted}})
	var erased struct {
		ID string `json:"erasure_id"`
	}
	require.NoError(t, json.Unmarshal(body, &erased), "%s", body)
	apitest.Eventually(t, 60*time.Second, "the erasure is done", func() bool {
		_, body, _ := s.Do(t, apitest.Call{Name: "status", Method: http.MethodGet, URL: adm + "/admin/v1/erasures/" + erased.ID, Header: auth,
			Want: []int{http.StatusOK}})
		return strings.Contains(string(body), `"status":"done"`)
	})

	for _, c := range []apitest.Call{
		{Name: "export", Method: http.MethodGet, URL: adm + "/admin/v1/users/oa-erase/export", Header: auth, Want: []int{http.StatusOK}},
		{Name: "export bad uid", Method: http.MethodGet, URL: adm + "/admin/v1/users/a%20b/export", Header: auth, Want: []int{http.StatusBadRequest}, ErrCode: "invalid_uid"},
		{Name: "export by a viewer", Method: http.MethodGet, URL: adm + "/admin/v1/users/oa-erase/export", Header: viewer, Want: []int{http.StatusForbidden}},
		{Name: "erase bad uid", Method: http.MethodDelete, URL: adm + "/admin/v1/users/a%20b", Header: auth, Want: []int{http.StatusBadRequest}, ErrCode: "invalid_uid"},
		{Name: "erase by a viewer", Method: http.MethodDelete, URL: adm + "/admin/v1/users/oa-erase", Header: viewer, Want: []int{http.StatusForbidden}},
		{Name: "erase without a key", Method: http.MethodDelete, URL: "http://" + off.Admin + "/admin/v1/users/oa-erase", Header: auth,
			Want: []int{http.StatusNotImplemented}, ErrCode: "erasure_not_configured"},
		{Name: "status bad id", Method: http.MethodGet, URL: adm + "/admin/v1/erasures/nope", Header: auth, Want: []int{http.StatusBadRequest}, ErrCode: "invalid_erasure_id"},
		{Name: "status unknown", Method: http.MethodGet, URL: adm + "/admin/v1/erasures/0123456789abcdef0123456789abcdef", Header: auth,
			Want: []int{http.StatusNotFound}, ErrCode: "erasure_not_found"},
		{Name: "status by a viewer", Method: http.MethodGet, URL: adm + "/admin/v1/erasures/" + erased.ID, Header: viewer, Want: []int{http.StatusForbidden}},
	} {
		s.Do(t, c)
	}
}

// TestTheExportHoldsEveryRowThatNamesTheUser compares a user's export with an independent scan of
// every table of the schema (testenv.TraceRows, which knows none of the service's tables): each
// table with rows that name the uid must be in the export with as many rows, the goal attribution
// and the audience uploads included, and the rows an erasure keeps (a QA uid in a popup's
// targeting, its revisions and audit entries) must be said. A table added later that holds uids
// fails it until the export covers it.
func TestTheExportHoldsEveryRowThatNamesTheUser(t *testing.T) {
	t.Parallel()
	cfg := apitest.PrivacyConfig(t)
	api := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	db := apitest.DB(t, cfg)
	ctx := context.Background()
	const uid = "exp0rt-user.5c1e"

	res := api.AdminDo(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": "purchase", "name": "Purchase"})
	require.Equal(t, http.StatusCreated, res.Status, res.Raw)
	aud := api.CreateAudience(t, "export-vips")
	status, _, raw := api.Send(t, apitest.Token, http.MethodPost, "/admin/v1/audiences/"+aud+"/members/add", "text/plain",
		strings.NewReader(uid+"\nsomeone-else\n"))
	require.Equal(t, http.StatusOK, status, raw)
	// a draft whose targeting names the uid as a QA device, edited once: two revisions, two audit entries
	qa := api.CreatePopup(t, apitest.PopupSpec("export-qa", map[string]any{"status": "draft", "targeting": map[string]any{"uids": []string{uid}}}))
	res = api.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(qa), apitest.PopupSpec("export-qa", map[string]any{"status": "draft",
		"priority": 3, "targeting": map[string]any{"uids": []string{uid}}}))

	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	id := api.CreatePopup(t, apitest.PopupSpec("export-exp", map[string]any{"experiment": map[string]any{
		"variants": []map[string]any{{"key": "a", "weight": 50, "title": "A"}, {"key": "b", "weight": 50, "title": "B"}}}}))

	res = api.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	apitest.Eventually(t, 15*time.Second, "the experiment is shown to the user", func() bool {
		got, _ := api.Get(t, "uid="+uid+"&platform=ios&app_version=8.10.0")
		return got == id
	})

	res = api.Conversion(t, map[string]any{"uid": uid, "goal": "purchase", "event_id": "order-1"})
	require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	apitest.Eventually(t, 15*time.Second, "the worker writes the exposure and attributes the conversion", func() bool {
		return apitest.Count(t, db, `SELECT COUNT(*) FROM popup_experiment_goal_user WHERE uid = ?`, uid) == 1 &&
			apitest.Count(t, db, `SELECT COUNT(*) FROM popup_conversion_log WHERE uid = ?`, uid) == 1
	})

	res = api.AdminDo(t, http.MethodGet, "/admin/v1/users/"+uid+"/export", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	n := func(key string) int64 {
		list, ok := res.Body[key].([]any)
		require.True(t, ok, "the export has %s: %s", key, res.Raw)
		return int64(len(list))
	}
	kept := map[string]int64{}
	for _, k := range res.Body["erasure_keeps"].([]any) {
		k := k.(map[string]any)
		assert.Equal(t, float64(qa), k["popup_id"])
		assert.NotEmpty(t, k["why"])
		kept[k["table"].(string)] += int64(k["rows"].(float64))
	}
	exported := map[string]int64{
		"popup_action_log":           n("actions"),
		"popup_experiment_user":      n("experiments"),
		"popup_experiment_goal_user": n("goal_attribution"),
		"popup_conversion_log":       n("conversions"),
		"audience_uids":              n("audience_uploads"),
		"popup_config":               kept["popup_config"],
		"popup_revision":             kept["popup_revision"],
		"popup_audit":                kept["popup_audit"],
	}
	scanned, err := testenv.TraceRows(ctx, db, uid)
	require.NoError(t, err)
	for _, table := range []string{"popup_experiment_goal_user", "popup_conversion_log", "audience_uids", "popup_config", "popup_revision", "popup_audit"} {
		assert.Contains(t, scanned, table, "the scan finds the rows the test made")
	}
	for table, rows := range scanned {
		if table == "popup_user_state" {
			// the state is the newest of MySQL and Redis: one entry per popup, whichever holds it
			assert.GreaterOrEqual(t, n("state"), rows, "popup_user_state")
			continue
		}
		want, known := exported[table]
		if assert.True(t, known, "table %s has %d row(s) that name the uid, and the export does not say so", table, rows) {
			assert.Equal(t, rows, want, "rows of %s", table)
		}
	}
}
