package popups

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
	"popupsvc/internal/popuplist"
)

func TestListCursorsRoundTripAndBelongToOneSort(t *testing.T) {
	t.Parallel()
	p := popup.Popup{ID: 42, Name: "Spring, \"sale\"", Priority: -3, UpdatedAt: time.Date(2026, 2, 3, 4, 5, 6, 789_000_000, time.UTC)}
	for _, s := range []string{"id", "-id", "updated_at", "-updated_at", "name", "-name", "priority", "-priority"} {
		t.Run(s, func(t *testing.T) {
			sort, ok := popuplist.ParseSort(s)
			require.True(t, ok)
			cursor := encodeCursor(p, sort)
			pos, ok := decodeCursor(cursor, sort)
			require.True(t, ok)
			want := popuplist.Position{ID: 42}
			switch sort.Key {
			case popuplist.SortByUpdatedAt:
				want.UpdatedAt = p.UpdatedAt
			case popuplist.SortByName:
				want.Name = p.Name
			case popuplist.SortByPriority:
				want.Priority = p.Priority
			}
			assert.Equal(t, want, *pos)
			for _, other := range []string{"id", "-id", "updated_at", "-name", "priority"} {
				if other != s {
					o, _ := popuplist.ParseSort(other)
					_, ok := decodeCursor(cursor, o)
					assert.False(t, ok, "a cursor of %s is refused by %s", s, other)
				}
			}
		})
	}
}

func TestListCursorRefusesWhatNoPageGave(t *testing.T) {
	t.Parallel()
	byID, _ := popuplist.ParseSort("id")
	byName, _ := popuplist.ParseSort("name")
	tests := []struct {
		name string
		give string
		sort popuplist.Sort
		want bool
	}{
		{name: "a decimal id continues the id order (cursors before sorting)", give: "17", sort: byID, want: true},
		{name: "zero", give: "0", sort: byID},
		{name: "negative", give: "-4", sort: byID},
		{name: "a decimal id is not a name cursor", give: "17", sort: byName},
		{name: "not base64", give: "!!", sort: byName},
		{name: "base64 of garbage", give: "Z2FyYmFnZQ", sort: byName},
		{name: "the key missing", give: b64(`{"s":"name","id":3}`), sort: byName},
		{name: "an unknown key", give: b64(`{"s":"name","id":3,"n":"a","x":1}`), sort: byName},
		{name: "no id", give: b64(`{"s":"name","n":"a"}`), sort: byName},
		{name: "well formed", give: b64(`{"s":"name","id":3,"n":"a"}`), sort: byName, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := decodeCursor(tt.give, tt.sort)
			assert.Equal(t, tt.want, ok)
		})
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// listRepo answers Find with the popups it holds (the query is recorded) and Update and Rollback
// with a write that changed nothing.
type listRepo struct {
	PopupRepo
	popups []popup.Popup
	got    popuplist.Query
}

func (r *listRepo) Find(_ context.Context, q popuplist.Query) (popuplist.Page, error) {
	r.got = q
	return popuplist.Page{Popups: r.popups[:min(q.Limit, len(r.popups))], Total: len(r.popups)}, nil
}

func (r *listRepo) Update(context.Context, popup.Actor, int64, popup.Popup, popup.UpdateOptions) (popup.Popup, bool, error) {
	return r.popups[0], false, nil
}

func (r *listRepo) Rollback(context.Context, popup.Actor, int64, int64, popup.UpdateOptions) (popup.Popup, bool, error) {
	return r.popups[0], false, nil
}

var listNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func newListAdmin(t *testing.T, repo PopupRepo, reloads *int) http.Handler {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &httpapi.Admin{Operators: []operator.Operator{{Name: "alice", Role: popup.RoleAdmin, Token: "token-alice"}}, Log: log,
		Slices: []httpapi.Slice{&API{Repo: repo, Shared: &httpapi.Shared{Log: log, Now: func() time.Time { return listNow },
			Reload: func(context.Context) (int64, error) {
				*reloads++
				return 1, nil
			}}}}}
	r, err := a.Router()
	require.NoError(t, err)
	return r
}

func serveAdmin(t *testing.T, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer token-alice")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestListParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		give      string
		wantField string // "" = accepted
	}{
		{name: "defaults", give: ""},
		{name: "sort descending by update", give: "sort=-updated_at"},
		{name: "every state", give: "state=draft&state=scheduled"},
		{name: "sort unknown", give: "sort=title", wantField: "sort"},
		{name: "sort two dashes", give: "sort=--id", wantField: "sort"},
		{name: "sort empty", give: "sort=", wantField: ""},
		{name: "state unknown", give: "state=active", wantField: "state"},
		{name: "cursor of another sort", give: "sort=name&cursor=" + encodeCursor(popup.Popup{ID: 3}, popuplist.Sort{Key: popuplist.SortByID}), wantField: "cursor"},
		{name: "cursor garbage", give: "cursor=abc", wantField: "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reloads int
			h := newListAdmin(t, &listRepo{}, &reloads)
			rec := serveAdmin(t, h, http.MethodGet, "/admin/v1/popups?"+tt.give, "")
			if tt.wantField == "" {
				assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
				return
			}
			require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			var body struct {
				Error struct {
					Code   string `json:"code"`
					Fields []struct {
						Field string `json:"field"`
					} `json:"fields"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			assert.Equal(t, "invalid_query", body.Error.Code)
			require.Len(t, body.Error.Fields, 1)
			assert.Equal(t, tt.wantField, body.Error.Fields[0].Field)
		})
	}
}

func TestListAnswersTotalStateAndANextCursorOfItsSort(t *testing.T) {
	t.Parallel()
	end := listNow.Add(-time.Minute)
	repo := &listRepo{popups: []popup.Popup{
		{ID: 1, Name: "a", BucketSeed: "s1", Status: popup.StatusActive, EndAt: &end},
		{ID: 2, Name: "b", BucketSeed: "s2", Status: popup.StatusDraft},
		{ID: 3, Name: "c", BucketSeed: "s3", Status: popup.StatusActive},
	}}
	var reloads int
	h := newListAdmin(t, repo, &reloads)
	rec := serveAdmin(t, h, http.MethodGet, "/admin/v1/popups?sort=-name&limit=2&state=ended&q=x", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, popuplist.Query{State: popup.StateEnded, Now: listNow, Search: "x", Sort: popuplist.Sort{Key: popuplist.SortByName, Desc: true}, Limit: 3}, repo.got)
	var body struct {
		Popups []adminPopup `json:"popups"`
		Next   *string      `json:"next"`
		Total  int          `json:"total"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, 3, body.Total)
	require.Len(t, body.Popups, 2)
	assert.Equal(t, "ended", body.Popups[0].State, "the state at the server's now")
	assert.Equal(t, "draft", body.Popups[1].State)
	require.NotNil(t, body.Next)
	pos, ok := decodeCursor(*body.Next, popuplist.Sort{Key: popuplist.SortByName, Desc: true})
	require.True(t, ok)
	assert.Equal(t, popuplist.Position{ID: 2, Name: "b"}, *pos)
}

// TestSavesThatChangeNothingAreNotPropagated: an update or rollback the store reports as
// unchanged answers the stored popup and its ETag, and reloads no cache.
func TestSavesThatChangeNothingAreNotPropagated(t *testing.T) {
	t.Parallel()
	repo := &listRepo{popups: []popup.Popup{{ID: 5, Revision: 4, Name: "a", BucketSeed: "s", Status: popup.StatusPaused}}}
	var reloads int
	h := newListAdmin(t, repo, &reloads)
	for _, rec := range []*httptest.ResponseRecorder{
		serveAdmin(t, h, http.MethodPut, "/admin/v1/popups/5", `{"name":"a","status":"paused","state":"running"}`),
		serveAdmin(t, h, http.MethodPost, "/admin/v1/popups/5/rollback", `{"revision":1}`),
	} {
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.Equal(t, `"4"`, rec.Header().Get("ETag"))
		assert.Contains(t, rec.Body.String(), `"revision":4`)
		assert.Contains(t, rec.Body.String(), `"state":"paused"`, "state sent back is ignored")
	}
	assert.Zero(t, reloads, "nothing to propagate")
}
