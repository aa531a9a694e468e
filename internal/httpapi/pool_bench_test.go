package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/testenv"
)

// poolPopups is the number of popups of poolRouter: benchtool seed's default.
const poolPopups = 20

// hiddenAllUsers is a user store in which every user saw each of poolRouter's popups and will not
// see any for a day.
type hiddenAllUsers struct {
	hiddenUsers
	gets *atomic.Int64 // the reads: the requests the local answers did not answer
}

func (u hiddenAllUsers) Get(context.Context, string, time.Time) (popup.StoredState, error) {
	u.gets.Add(1)
	m := make(map[int64]popup.PopupState, poolPopups)
	for i := range poolPopups {
		m[int64(100+i)] = popup.PopupState{NextShowAt: t0.Add(24 * time.Hour), Impressions: 1}
	}
	return popup.StoredState{UserState: popup.UserState{Popups: popup.StatesOf(m)}, Raw: "x"}, nil
}

// BenchmarkGetPopupPoolPaired is make bench's steady state and run K's twin of it at the bench's
// working set, through the router and net/http's request parsing: benchtool seed's 20 popups over
// 8 regions, a pool of 100,000 users each asking with loadtest/bench.lua's fields, answered from
// the local answers (the default size, 100,000: about 1% of the GETs read the store, as in make
// bench). "rules" puts K's two rules and the placements home and checkout on the even popups and
// sends attr.plan and attr.build; "attrs" sends them to the config without rules.
//
// Two cases run in one process, alternating blocks of 10,000 GETs, each with its own router and
// local answers, so that both see the same moments of a shared machine: CPU ns a GET of each ("a"
// and "b") and b − a; an op is one GET of each. The blocks carry the pprof label case=a or b
// (-cpuprofile, then pprof -tagfocus case=b).
func BenchmarkGetPopupPoolPaired(b *testing.B) {
	type poolCase struct{ rules, attrs bool }
	none, attrsOnly, withRules := poolCase{}, poolCase{attrs: true}, poolCase{rules: true, attrs: true}
	for _, bc := range []struct {
		name string
		a, b poolCase
	}{{"no rules vs rules", none, withRules}, {"rules vs no rules", withRules, none}, {"no rules vs attrs", none, attrsOnly}} {
		b.Run(bc.name, func(b *testing.B) {
			const users, block = 100_000, 10_000
			type side struct {
				serve func(i int)
				cpu   time.Duration
				n     int
				label context.Context
				gets  *atomic.Int64
			}
			var sides [2]*side
			for k, c := range []poolCase{bc.a, bc.b} {
				h, gets := poolRouter(b, c.rules)
				raw := make([][]byte, users)
				for i := range raw {
					raw[i] = poolRequest(i, c.attrs)
				}
				br := new(bytes.Reader)
				rd := bufio.NewReaderSize(br, 4096)
				w := &discardWriter{h: http.Header{}}
				sides[k] = &side{gets: gets, label: pprof.WithLabels(context.Background(), pprof.Labels("case", string(rune('a'+k)))),
					serve: func(i int) {
						br.Reset(raw[i])
						rd.Reset(br)
						req, err := http.ReadRequest(rd)
						if err != nil {
							b.Fatal(err)
						}
						clear(w.h)
						h.ServeHTTP(w, req)
					}}
				for i := range users {
					sides[k].serve(i)
				}
			}
			reads := sides[0].gets.Load() + sides[1].gets.Load()
			b.ReportAllocs()
			b.ResetTimer()
			x := uint32(1)
			for done, k := 0, 0; done < b.N; k ^= 1 {
				s, n := sides[k], min(block, b.N-done)
				pprof.SetGoroutineLabels(s.label)
				cpu0 := testenv.ProcessCPU(b)
				for range n {
					x ^= x << 13 // xorshift: a user of the pool at random, as wrk's requests are
					x ^= x >> 17
					x ^= x << 5
					s.serve(int(x % users))
				}
				s.cpu += testenv.ProcessCPU(b) - cpu0
				s.n += n
				if k == 1 {
					done += n
				}
			}
			b.StopTimer()
			pprof.SetGoroutineLabels(context.Background())
			ca, cb := float64(sides[0].cpu)/float64(sides[0].n), float64(sides[1].cpu)/float64(sides[1].n)
			b.ReportMetric(ca, "a-cpu-ns/op")
			b.ReportMetric(cb, "b-cpu-ns/op")
			b.ReportMetric(cb-ca, "b-a-cpu-ns/op")
			b.ReportMetric(float64(sides[0].gets.Load()+sides[1].gets.Load()-reads)/float64(2*b.N), "reads/GET")
		})
	}
}

// poolRequest is loadtest/bench.lua's GET of user i, with BENCH_ATTRS=1's attributes when attrs.
func poolRequest(i int, attrs bool) []byte {
	platforms := [...]string{"ios", "android", "web"}
	s := "GET /api/v1/popup?uid=user-" + strconv.Itoa(i) + "&platform=" + platforms[i%3] + "&app_version=8." +
		strconv.Itoa(i%13) + ".0&region=r" + strconv.Itoa(i%8) + "&lang=en"
	if attrs {
		plan := "pro"
		if i%2 != 0 {
			plan = "free"
		}
		s += "&attr.plan=" + plan + "&attr.build=9.2.0"
	}
	return []byte(s + " HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
}

// poolRouter is the public router over benchtool seed's popups (K's rules on the even ones with
// withRules), every user having seen them all.
func poolRouter(b *testing.B, withRules bool) (http.Handler, *atomic.Int64) {
	b.Helper()
	platforms := [...]string{"ios", "android", "web"}
	popups := make([]popup.Popup, poolPopups)
	for i := range popups {
		p := popup.Popup{ID: int64(100 + i), Name: "bench-" + strconv.Itoa(i), Status: popup.StatusActive, Priority: i % 100,
			ReshowAfterSeconds: 60, Creative: popup.Creative{Title: "Campaign " + strconv.Itoa(i)},
			Targeting: popup.Targeting{RolloutPercent: 100}}
		if i >= 5 {
			p.Targeting = popup.Targeting{Platforms: []string{platforms[i%3]}, Regions: []string{"r" + strconv.Itoa(i%8)},
				MinAppVersion: "8." + strconv.Itoa(i%12) + ".0", RolloutPercent: 10 + i%90}
		}
		if withRules && i%2 == 0 {
			p.Targeting.Placements = []string{popup.DefaultPlacement, "checkout"}
			p.Targeting.Rules = []rules.Rule{
				{Conditions: []rules.Condition{{Attr: "plan", Op: rules.OpIn, Values: []rules.Value{rules.Str("pro"), rules.Str("team")}}}},
				{Conditions: []rules.Condition{{Attr: "build", Op: rules.OpSemverGte, Values: []rules.Value{rules.Str("9.0.0")}}}},
			}
		}
		popups[i] = p
	}
	holder := &snapshot.Holder{}
	snap := snapshot.BuildWith(1, popups, t0, popup.LinkSchemes{}, nil)
	if len(snap.Problems) > 0 {
		b.Fatal(snap.Problems)
	}
	holder.Store(snap)
	gets := new(atomic.Int64)
	d := &decide.Decider{Snapshots: holder, Users: hiddenAllUsers{gets: gets}, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
		Local: decide.NewLocalAnswers(100_000)}
	p := &Public{Snapshots: holder, Decider: d, Now: func() time.Time { return t0 }, Metrics: NewMetrics(prometheus.NewRegistry()),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return p.Router(), gets
}
