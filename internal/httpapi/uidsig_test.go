package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/uidauth"
)

// memUsers is an in-memory UserStates that counts the calls made to it: a request refused by
// the uid signature check must not reach the store.
type memUsers struct{ calls atomic.Int64 }

func (m *memUsers) Get(context.Context, string, time.Time) (popup.StoredState, error) {
	m.calls.Add(1)
	return popup.StoredState{}, nil
}

func (m *memUsers) Record(context.Context, string, string, *popup.UserState, []event.Event, bool) (popup.Outcome, error) {
	m.calls.Add(1)
	return popup.Recorded, nil
}

const (
	gatewayKey    = "gateway-key-2026-0123456789abcdef0123456789"
	retiredKey    = "gateway-key-2025-0123456789abcdef0123456789"
	signedPopupID = 7
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// publicRouter is the real public router over one active popup and an in-memory user store;
// keys nil leaves uid signatures off.
func publicRouter(t *testing.T, keys []string) (http.Handler, *memUsers) {
	t.Helper()
	p, users := testPublic(t, keys)
	return p.Router(), users
}

// testPublic is publicRouter's Public, for tests that configure more before building the router.
func testPublic(t *testing.T, keys []string) (*Public, *memUsers) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	holder := &snapshot.Holder{}
	holder.Store(snapshot.BuildWith(1, []popup.Popup{{ID: signedPopupID, Name: "signed", Status: popup.StatusActive,
		Targeting: popup.Targeting{RolloutPercent: 100}, ReshowAfterSeconds: 60,
		Creative: popup.Creative{
			Title: "hi",
		},
	}}, t0, popup.LinkSchemes{}, nil))
	users := &memUsers{}
	d := &decide.Decider{Snapshots: holder, Users: users, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second}
	p := &Public{Snapshots: holder, Decider: d,
		Now: func() time.Time { return t0 }, Log: log}
	if keys != nil {
		v, err := uidauth.New(keys, 5*time.Minute)
		require.NoError(t, err)
		p.UIDAuth = v
	}
	return p, users
}

func serve(h http.Handler, method, target, body string, sigs ...string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for _, s := range sigs {
		req.Header.Add(uidauth.Header, s)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestUIDSignatureRequiredWhenConfigured(t *testing.T) {
	t.Parallel()
	h, users := publicRouter(t, []string{gatewayKey, retiredKey})
	get := "/api/v1/popup?uid=u1&platform=ios&app_version=8.10.0"
	post := "/api/v1/popups/" + strconv.Itoa(signedPopupID) + "/actions"
	click := `{"uid":"u1","action":"click"}`
	sig := uidauth.Sign(gatewayKey, "u1", t0)
	tests := []struct {
		name     string
		method   string
		target   string
		body     string
		sigs     []string
		wantCode int
		wantErr  string
	}{
		{"GET without a signature", "GET", get, "", nil, 401, "uid_signature_missing"},
		{"GET with an empty signature", "GET", get, "", []string{""}, 401, "uid_signature_missing"},
		{"GET with a malformed signature", "GET", get, "", []string{"t=1,v1=zz"}, 401, "uid_signature_invalid"},
		{"GET signed with an unknown key", "GET", get, "", []string{uidauth.Sign(strings.Repeat("x", 40), "u1", t0)}, 401, "uid_signature_invalid"},
		{"GET signed for another uid", "GET", get, "", []string{uidauth.Sign(gatewayKey, "u2", t0)}, 401, "uid_signature_invalid"},
		{"GET with an expired signature", "GET", get, "", []string{uidauth.Sign(gatewayKey, "u1", t0.Add(-6*time.Minute))}, 401, "uid_signature_expired"},
		{"GET signed in the future", "GET", get, "", []string{uidauth.Sign(gatewayKey, "u1", t0.Add(time.Hour))}, 401, "uid_signature_invalid"},
		{"GET with two signatures", "GET", get, "", []string{sig, sig}, 401, "uid_signature_invalid"},
		{"GET validates the uid first", "GET", "/api/v1/popup?uid=a%20b&platform=ios&app_version=1", "", nil, 400, "invalid_uid"},
		{"GET validates the query's escapes first", "GET", "/api/v1/popup?uid=%zz&platform=ios&app_version=1", "", nil, 400, "invalid_query"},
		{"POST without a signature", "POST", post, click, nil, 401, "uid_signature_missing"},
		{"POST signed for another uid", "POST", post, click, []string{uidauth.Sign(gatewayKey, "u2", t0)}, 401, "uid_signature_invalid"},
		{"POST with an expired signature", "POST", post, click, []string{uidauth.Sign(gatewayKey, "u1", t0.Add(-time.Hour))}, 401, "uid_signature_expired"},
		{"POST validates the body first", "POST", post, `{"uid":"u1","action":"like"}`, nil, 400, "invalid_action"},
		{"POST parses the body first", "POST", post, `{"uid":`, nil, 400, "invalid_json"},
		{"POST of an unknown popup is refused before the lookup", "POST", "/api/v1/popups/999/actions", click, nil, 401, "uid_signature_missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := users.calls.Load()
			rec := serve(h, tt.method, tt.target, tt.body, tt.sigs...)
			assert.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
			assert.Equal(t, tt.wantErr, body.Error.Code)
			assert.NotEmpty(t, body.Error.Message)
			assert.Equal(t, before, users.calls.Load(), "a refused request touches no store")
		})
	}
	t.Run("401s carry a challenge", func(t *testing.T) {
		rec := serve(h, "GET", get, "")
		assert.Contains(t, rec.Header().Get("WWW-Authenticate"), "PopupUidSig")
	})
}

func TestUIDSignatureAcceptedWithEveryKey(t *testing.T) {
	t.Parallel()
	h, _ := publicRouter(t, []string{gatewayKey, retiredKey})
	post := "/api/v1/popups/" + strconv.Itoa(signedPopupID) + "/actions"
	tests := []struct {
		name string
		key  string
	}{
		{"current key", gatewayKey},
		{"retired key still in the rotation", retiredKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid := "user-" + tt.key[12:16]
			rec := serve(h, "GET", "/api/v1/popup?uid="+uid+"&platform=ios&app_version=8.10.0", "", uidauth.Sign(tt.key, uid, t0.Add(-time.Minute)))
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), `"id":`+strconv.Itoa(signedPopupID), "the signed uid gets its popup")
			rec = serve(h, "POST", post, `{"uid":"`+uid+`","action":"close"}`, uidauth.Sign(tt.key, uid, t0))
			assert.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		})
	}
}

func TestUIDSignatureIgnoredWhenNotConfigured(t *testing.T) {
	t.Parallel()
	h, _ := publicRouter(t, nil)
	tests := []struct {
		name string
		sigs []string
	}{
		{"no header", nil},
		{"a garbage header", []string{"not a signature"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(h, "GET", "/api/v1/popup?uid=open&platform=ios&app_version=8.10.0", "", tt.sigs...)
			assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			rec = serve(h, "POST", "/api/v1/popups/"+strconv.Itoa(signedPopupID)+"/actions", `{"uid":"open","action":"click"}`, tt.sigs...)
			assert.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		})
	}
}
