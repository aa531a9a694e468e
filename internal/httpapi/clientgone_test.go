package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// ctxUsers is a user store whose calls fail the way go-redis does when their context ends
// first: it waits for ctx (bounded) and returns ctx's error, wrapped.
type ctxUsers struct{}

func (ctxUsers) Get(ctx context.Context, _ string, _ time.Time) (popup.StoredState, error) {
	return popup.StoredState{}, wait(ctx)
}

func (ctxUsers) Record(ctx context.Context, _, _ string, _ *popup.UserState, _ []event.Event, _ bool) (popup.Outcome, error) {
	return 0, wait(ctx)
}

func wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("get user state: %w", ctx.Err())
	case <-time.After(5 * time.Second):
		return errors.New("the test's context never ended")
	}
}

// TestClientHangUpsDoNotOpenTheBreaker: requests whose clients disconnect mid-call must not count
// as Redis failures (a load balancer or load generator closing its connections at once would
// otherwise open the breaker and degrade everyone), while the request budget running out must.
func TestClientHangUpsDoNotOpenTheBreaker(t *testing.T) {
	t.Parallel()
	const threshold = 3
	breakers := breaker.NewSet(1, threshold, time.Minute, nil)
	br := breakers.For("")
	holder := &snapshot.Holder{}
	holder.Store(snapshot.BuildWith(1, []popup.Popup{{ID: 9, Name: "p", Status: popup.StatusActive,
		Targeting: popup.Targeting{RolloutPercent: 100}, ReshowAfterSeconds: 60,
		Creative: popup.Creative{
			Title: "hi",
		},
	}}, t0, popup.LinkSchemes{}, nil))
	d := &decide.Decider{Snapshots: holder, Users: ctxUsers{}, Breakers: breakers, Budget: 50 * time.Millisecond}
	p := &Public{Snapshots: holder, Decider: d,
		Now: func() time.Time { return t0 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h := p.Router()
	get := func(ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/popup?uid=u1&platform=ios&app_version=8.10.0", nil).WithContext(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	post := func(ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/popups/"+strconv.Itoa(9)+"/actions", strings.NewReader(`{"uid":"u1","action":"click"}`)).WithContext(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	hungUp := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(5*time.Millisecond, cancel) // the client goes away mid-call
		return ctx
	}

	for i := 0; i < 4*threshold; i++ {
		get(hungUp())
		post(hungUp())
	}
	assert.True(t, br.Allow(t0), "client hang-ups opened the breaker")

	// The budget running out with the client still there is a Redis failure: degraded, counted.
	for i := 0; i < threshold; i++ {
		rec := get(context.Background())
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("X-Popup-Degraded"))
	}
	assert.False(t, br.Allow(t0), "timeouts with the client present must open the breaker")
}
