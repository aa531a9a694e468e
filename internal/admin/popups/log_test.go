package popups

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
)

// createOnlyRepo stores a create at revision 1 and fails every other call (they are not used).
type createOnlyRepo struct {
	PopupRepo
	actors []popup.Actor
}

func (r *createOnlyRepo) Create(_ context.Context, actor popup.Actor, p popup.Popup) (popup.Popup, error) {
	r.actors = append(r.actors, actor)
	p.ID, p.Revision, p.CreatedAt, p.UpdatedAt = 42, 1, time.Unix(0, 0).UTC(), time.Unix(0, 0).UTC()
	return p, nil
}

func TestAWriteIsAttributedAndLoggedOnceWithoutTheToken(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	repo := &createOnlyRepo{}
	log := slog.New(slog.NewTextHandler(&logged, nil))
	a := &httpapi.Admin{Operators: []operator.Operator{{Name: "alice", Role: popup.RoleAdmin, Token: "secret-alice-token"}, {Name: "bob", Role: popup.RoleEditor, Token: "secret-bob-token"}},
		Log: log, Slices: []httpapi.Slice{&API{Shared: &httpapi.Shared{Log: log, Now: time.Now,
			Reload: func(context.Context) (int64, error) { return 1, nil }}, Repo: repo}}}
	r, err := a.Router()
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodPost, "/admin/v1/popups", strings.NewReader(`{"name":"logged","status":"draft"}`))
	req.Header.Set("Authorization", "Bearer secret-bob-token")
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())

	assert.Equal(t, []popup.Actor{{Name: "bob", Role: popup.RoleEditor}}, repo.actors, "the write is attributed to the token's operator, with its role")
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.Len(t, lines, 1, logged.String())
	for _, want := range []string{"operator=bob", "role=editor", "action=create", "popup_id=42", "revision=1"} {
		assert.Contains(t, lines[0], want)
	}
	assert.NotContains(t, logged.String(), "secret")
}

func TestARefusalIsLoggedAtWarnAndCountedWithoutTheToken(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	repo := &createOnlyRepo{}
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(&logged, nil))
	a := &httpapi.Admin{Operators: []operator.Operator{{Name: "vera", Role: popup.RoleViewer, Token: "secret-vera-token"}}, Registerer: reg,
		Log: log, Slices: []httpapi.Slice{&API{Shared: &httpapi.Shared{Log: log, Now: time.Now,
			Reload: func(context.Context) (int64, error) { return 1, nil }}, Repo: repo}}}
	r, err := a.Router()
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodPost, "/admin/v1/popups", strings.NewReader(`{"name":"refused","status":"draft"}`))
	req.Header.Set("Authorization", "Bearer secret-vera-token")
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	require.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"error":{"code":"forbidden","message":"writing popups needs the editor role; vera is a viewer","role_needed":"editor"}}`, rec.Body.String())
	assert.Empty(t, repo.actors, "nothing reaches the store")

	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.Len(t, lines, 1, logged.String())
	for _, want := range []string{"level=WARN", "operator=vera", "role=viewer", "method=POST", "route=/admin/v1/popups", "role_needed=editor"} {
		assert.Contains(t, lines[0], want)
	}
	assert.NotContains(t, logged.String(), "secret")
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "popup_admin_forbidden_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	assert.Equal(t, map[string]float64{"editor": 1, "publisher": 0, "admin": 0}, got, "one series per role that can be needed, from the start")
}
