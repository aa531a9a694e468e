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
	"popupsvc/internal/popup/rules"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/testenv"
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

// rulesPopupID is the second popup of the "rules" cases, which hiddenPairUsers hide too.
const rulesPopupID = signedPopupID + 1

// hiddenPairUsers is hiddenUsers for the "rules" cases: every user saw popups 7 and 8 and will
// see neither for a day.
type hiddenPairUsers struct{ hiddenUsers }

func (hiddenPairUsers) Get(context.Context, string, time.Time) (popup.StoredState, error) {
	hidden := popup.PopupState{NextShowAt: t0.Add(24 * time.Hour), Impressions: 1}
	return popup.StoredState{UserState: popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{
		signedPopupID: hidden, rulesPopupID: hidden})}, Raw: "x"}, nil
}

// BenchmarkGetPopupSteadyState is the homepage GET of a warm user with nothing to show, through
// the real router, answered locally (no store call) or by reading the in-memory store.
//
// The "audiences" cases target the popup at an include and an exclude audience of a million
// members each, the user in the first and not in the second: the same decision plus the two
// checks (docs/PERFORMANCE.md, Audiences).
//
// The "rules" case is make bench's run K in miniature: two popups, the first (in selection order)
// with the two rules `plan in [pro, team]` or `build semver_gte 9.0.0` and the placements home
// and checkout, and a GET carrying attr.plan=pro&attr.build=9.2.0; "rules off" is its twin, the
// same two popups without rules or placements and the GET without attributes. Their ratio is
// what the attributes and rules add to the steady state (docs/PERFORMANCE.md, "Rules").
// "placement without popups" asks for placement=checkout, which no popup is in: it must cost no
// more than "local answers on", today's nothing to show.
//
// cpu-ns/op is the process's CPU time per GET (garbage collection included), which on a shared
// machine says more than the wall clock's ns/op.
func BenchmarkGetPopupSteadyState(b *testing.B) {
	var sets *audience.Sets
	for _, bc := range []struct {
		name      string
		size      int
		audiences bool
		rules     rulesCase
	}{{"local answers on", 1000, false, noRules}, {"local answers on, audiences", 1000, true, noRules},
		{"local answers on, rules off", 1000, false, rulesOff}, {"local answers on, rules", 1000, false, rulesOn},
		{"local answers on, placement without popups", 1000, false, otherPlacement},
		{"local answers off", 0, false, noRules}, {"local answers off, audiences", 0, true, noRules}} {
		b.Run(bc.name, func(b *testing.B) {
			var bound *audience.Sets
			if bc.audiences {
				if sets == nil {
					sets = benchAudiences(b)
				}
				bound = sets
			}
			h, req := steadyRouter(b, bc.size, bound, nil, bc.rules)
			w := discardWriter{h: http.Header{}}
			b.ReportAllocs()
			cpu0 := testenv.ProcessCPU(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(&w, req)
			}
			b.StopTimer()
			b.ReportMetric(float64(testenv.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// rulesCase is the popups and request of a steady-state case: popup 7 alone, the "rules"
// cases' pair with rules off or on, or popup 7 and a GET for a placement it is not in.
type rulesCase uint8

const (
	noRules rulesCase = iota
	rulesOff
	rulesOn
	otherPlacement
)

// steadyStateRouter is the public router over popup 7, which every user saw and may not see
// again for a day (hiddenUsers), and a homepage GET of user-1234 that it answers with no popup.
// localSize sizes the local answers (0 = off); sets, when not nil, targets the popup at its
// audiences 1 (include) and 2 (exclude); origins, when not nil, turns CORS on.
func steadyStateRouter(b *testing.B, localSize int, sets *audience.Sets, origins *cors.Origins) (http.Handler, *http.Request) {
	b.Helper()
	return steadyRouter(b, localSize, sets, origins, noRules)
}

// steadyRouter is steadyStateRouter with the popups and request of rc.
func steadyRouter(b *testing.B, localSize int, sets *audience.Sets, origins *cors.Origins, rc rulesCase) (http.Handler, *http.Request) {
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
	popups := []popup.Popup{pp}
	var users decide.UserStates = hiddenUsers{}
	target := "/api/v1/popup?uid=user-1234&platform=ios&app_version=8.10.0&region=us&lang=en"
	if rc == otherPlacement {
		target += "&placement=checkout" // popup 7 is in home only: no popup of the snapshot is looked at
	}
	if rc == rulesOff || rc == rulesOn {
		plain := pp
		plain.ID, plain.Name = rulesPopupID, "plain"
		pp.Priority = 2 // first in selection order, as make bench's ruled popups are
		if rc == rulesOn {
			pp.Targeting.Placements = []string{popup.DefaultPlacement, "checkout"}
			pp.Targeting.Rules = []rules.Rule{
				{Conditions: []rules.Condition{{Attr: "plan", Op: rules.OpIn, Values: []rules.Value{rules.Str("pro"), rules.Str("team")}}}},
				{Conditions: []rules.Condition{{Attr: "build", Op: rules.OpSemverGte, Values: []rules.Value{rules.Str("9.0.0")}}}},
			}
			target += "&attr.plan=pro&attr.build=9.2.0"
		}
		popups, users = []popup.Popup{pp, plain}, hiddenPairUsers{}
	}
	holder := &snapshot.Holder{}
	snap := snapshot.BuildWith(1, popups, t0, popup.LinkSchemes{}, sets)
	if len(snap.Problems) > 0 {
		b.Fatal(snap.Problems)
	}
	holder.Store(snap)
	d := &decide.Decider{Snapshots: holder, Users: users, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
		Local: decide.NewLocalAnswers(localSize)}
	p := &Public{Snapshots: holder, Decider: d, Now: func() time.Time { return t0 }, Metrics: NewMetrics(prometheus.NewRegistry()),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if origins != nil {
		p.CORS = *origins
	}
	h := p.Router()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.String() != `{"popup":null,"config_version":1}` {
		b.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	if localSize > 0 && rc != otherPlacement && d.Local.Len() != 1 { // (a placement without popups needs none)
		b.Fatalf("%d local answers after the first GET, want 1: the next ones would not be answered locally", d.Local.Len())
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
