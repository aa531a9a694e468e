package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/audience"
	"popupsvc/internal/breaker"
	"popupsvc/internal/cors"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// hiddenUsers is a user store in which every user saw popup 7 and will not see it for a day.
type hiddenUsers struct{}

func (hiddenUsers) Get(context.Context, string, time.Time) (popup.StoredState, error) {
	return popup.StoredState{UserState: popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{
		signedPopupID: {NextShowAt: t0.Add(24 * time.Hour), Impressions: 1}})}, Raw: "x"}, nil
}

func (hiddenUsers) Record(context.Context, string, string, *popup.UserState, []event.Event, bool) (popup.Outcome, error) {
	return popup.Conflict, nil
}

// BenchmarkGetPopupSteadyState is the homepage GET of a warm user with nothing to show, through
// the real router, answered locally (no store call) or by reading the in-memory store.
//
// The "audiences" cases target the popup at an include and an exclude audience of a million
// members each, the user in the first and not in the second: the same decision plus the two
// checks (docs/PERFORMANCE.md, Audiences).
func BenchmarkGetPopupSteadyState(b *testing.B) {
	var sets *audience.Sets
	for _, bc := range []struct {
		name      string
		size      int
		audiences bool
	}{{"local answers on", 1000, false}, {"local answers on, audiences", 1000, true}, {"local answers off", 0, false}, {"local answers off, audiences", 0, true}} {
		b.Run(bc.name, func(b *testing.B) {
			var bound *audience.Sets
			if bc.audiences {
				if sets == nil {
					sets = benchAudiences(b)
				}
				bound = sets
			}
			h, req := steadyStateRouter(b, bc.size, bound, nil)
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(&w, req)
			}
		})
	}
}

// steadyStateRouter is the public router over popup 7, which every user saw and may not see
// again for a day (hiddenUsers), and a homepage GET of user-1234 that it answers with no popup.
// localSize sizes the local answers (0 = off); sets, when not nil, targets the popup at its
// audiences 1 (include) and 2 (exclude); origins, when not nil, turns CORS on.
func steadyStateRouter(b *testing.B, localSize int, sets *audience.Sets, origins *cors.Origins) (http.Handler, *http.Request) {
	b.Helper()
	pp := popup.Popup{ID: signedPopupID, Name: "p", Status: popup.StatusActive,
		Targeting: popup.Targeting{RolloutPercent: 100}, ReshowAfterSeconds: 60,
		Creative: popup.Creative{
			Title: "hi",
		},
	}
	if sets != nil {
		pp.Targeting.Audiences = popup.AudienceRefs{Include: []int64{1}, Exclude: []int64{2}}
	}
	holder := &snapshot.Holder{}
	holder.Store(snapshot.BuildWith(1, []popup.Popup{pp}, t0, popup.LinkSchemes{}, sets))
	d := &decide.Decider{Snapshots: holder, Users: hiddenUsers{}, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
		Local: decide.NewLocalAnswers(localSize)}
	p := &Public{Snapshots: holder, Decider: d, Now: func() time.Time { return t0 }, Metrics: NewMetrics(prometheus.NewRegistry()),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if origins != nil {
		p.CORS = *origins
	}
	h := p.Router()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/popup?uid=user-1234&platform=ios&app_version=8.10.0&region=us&lang=en", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.String() != `{"popup":null,"config_version":1}` {
		b.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	return h, req
}

// benchAudiences holds audience 1, a million uids with user-1234 among them, and audience 2, a
// million without it.
func benchAudiences(b *testing.B) *audience.Sets {
	key := audience.Key{7}
	set := func(id int64, member func(i int) string) *audience.Set {
		fps := make([]uint64, 1_000_000)
		for i := range fps {
			fps[i] = audience.Fingerprint(key, member(i))
		}
		s, err := audience.NewSet(id, 1, key, audience.SortUnique(fps))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	in := set(1, func(i int) string { return "user-" + strconv.Itoa(i) })
	out := set(2, func(i int) string { return "other-" + strconv.Itoa(i) })
	return audience.NewSets(1, map[int64]*audience.Set{1: in, 2: out}, nil)
}

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark measures the handler.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
