package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// hiddenUsers is a user store in which every user saw popup 7 and will not see it for a day.
type hiddenUsers struct{}

func (hiddenUsers) Get(context.Context, string, time.Time) (popup.StoredState, error) {
	return popup.StoredState{UserState: popup.UserState{Popups: map[int64]popup.PopupState{
		signedPopupID: {NextShowAt: t0.Add(24 * time.Hour), Impressions: 1}}}, Raw: "x"}, nil
}

func (hiddenUsers) Record(context.Context, string, string, *popup.UserState, []event.Event, bool) (popup.Outcome, error) {
	return popup.Conflict, nil
}

// BenchmarkGetPopupSteadyState is the homepage GET of a warm user with nothing to show, through
// the real router, answered locally (no store call) or by reading the in-memory store.
func BenchmarkGetPopupSteadyState(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"local answers on", 1000}, {"local answers off", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			holder := &snapshot.Holder{}
			holder.Store(snapshot.BuildWith(1, []popup.Popup{{ID: signedPopupID, Name: "p", Status: popup.StatusActive,
				Targeting: popup.Targeting{RolloutPercent: 100}, ReshowAfterSeconds: 60,
				Creative: popup.Creative{
					Title: "hi",
				},
			}}, t0, popup.LinkSchemes{}, nil))
			d := &decide.Decider{Snapshots: holder, Users: hiddenUsers{}, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
				Local: decide.NewLocalAnswers(bc.size)}
			p := &Public{Snapshots: holder, Decider: d, Now: func() time.Time { return t0 }, Metrics: NewMetrics(prometheus.NewRegistry()),
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			h := p.Router()
			req := httptest.NewRequest(http.MethodGet, "/api/v1/popup?uid=user-1234&platform=ios&app_version=8.10.0&region=us&lang=en", nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Body.String() != `{"popup":null,"config_version":1}` {
				b.Fatalf("%d %s", rec.Code, rec.Body.String())
			}
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(&w, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark measures the handler.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
