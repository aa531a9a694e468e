package decide_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
	"popupsvc/internal/snapshot"
	"popupsvc/internal/testenv"
)

// mixPopups is the popup list of make bench's revisit mix (loadtest/benchtool mix.go, issue 57) as
// domain popups: n active popups, each on 1-3 random platforms and 1-3 of ten regions m0..m9, 30%
// with a 10/30/50% rollout, priorities 1-500, reshown after a day, hidden a week after a click.
func mixPopups(n int) []popup.Popup {
	rng := rand.New(rand.NewPCG(57, 1000))
	pick := func(from []string, k int) []string {
		out := make([]string, 0, k)
		for _, i := range rng.Perm(len(from))[:k] {
			out = append(out, from[i])
		}
		return out
	}
	platforms := []string{popup.PlatformIOS, popup.PlatformAndroid, popup.PlatformWeb}
	regions := make([]string, 10)
	for i := range regions {
		regions[i] = "m" + strconv.Itoa(i)
	}
	ps := make([]popup.Popup, 0, n)
	for i := range n {
		id := int64(i + 1)
		rollout := 100
		t := popup.Targeting{Platforms: pick(platforms, 1+rng.IntN(3)), Regions: pick(regions, 1+rng.IntN(3))}
		if rng.IntN(10) < 3 {
			rollout = [...]int{10, 30, 50}[rng.IntN(3)]
		}
		t.RolloutPercent = rollout
		priority := 1 + rng.IntN(500)
		ps = append(ps, active(id, func(p *popup.Popup) {
			p.Targeting, p.Priority = t, priority
			p.ReshowAfterSeconds, p.ClickCooldownSeconds, p.CloseCooldownSeconds = 86400, 7*86400, 0
		}))
	}
	return ps
}

// mixRequests is a seeded sequence of n requests of the revisit mix: users rv0..rv(users-1)
// drawn from a Zipf distribution (s = 1, loadtest/bench-revisit.lua's draw), each with a stable
// platform and region, app version 9.2.0.
func mixRequests(n, users int) []popup.Request {
	rng := rand.New(rand.NewPCG(57, 200000))
	platforms := []string{popup.PlatformIOS, popup.PlatformAndroid, popup.PlatformWeb}
	logUsers := math.Log(float64(users + 1))
	reqs := make([]popup.Request, n)
	for k := range reqs {
		i := int(math.Exp(rng.Float64()*logUsers)) - 1
		reqs[k] = popup.Request{UID: "rv" + strconv.Itoa(i), Platform: platforms[i%3], AppVersion: popup.Version{9, 2, 0},
			Region: "m" + strconv.Itoa(i%10), Lang: "en"}
	}
	return reqs
}

// BenchmarkDecideRevisitMix is the decision of make bench's revisit mix (run H; issue 57): 1,000
// popups, the daily cap at 2, Zipf users over 200,000 against the in-memory store, with local
// answers on (the default 100,000). Each timed request follows 450,000 untimed ones of the same
// sequence (15 s of the stack's warm-up), so the mix is the one the stack measures: many capped
// users answered locally, a tail of first visits shown a popup. Run it with a fixed count, e.g.
// -benchtime=200000x; cpu-ns/op is the process's CPU (garbage collection included) per decision.
func BenchmarkDecideRevisitMix(b *testing.B) {
	revisitMix(b, mixPopups(1000), mixRequests(450000+b.N, 200000))
}

// BenchmarkDecideRevisitMixRules is BenchmarkDecideRevisitMix with half the popups carrying two
// rules and a second placement, and every request carrying the attributes they read (a plan,
// free or pro by user, and the app build): the target is the plain mix's figure within
// 0.02 (docs/PERFORMANCE.md, "Rules").
func BenchmarkDecideRevisitMixRules(b *testing.B) {
	ps := mixPopups(1000)
	for i := range ps {
		if i%2 == 0 {
			t := &ps[i].Targeting
			t.Placements = []string{popup.DefaultPlacement, "checkout"}
			t.Rules = []rules.Rule{
				{Conditions: []rules.Condition{{Attr: "plan", Op: rules.OpIn, Values: []rules.Value{rules.Str("pro"), rules.Str("team")}}}},
				{Conditions: []rules.Condition{{Attr: "build", Op: rules.OpSemverGte, Values: []rules.Value{rules.Str("9.0.0")}}}},
			}
		}
	}
	reqs := mixRequests(450000+b.N, 200000)
	free, pro := rules.NewAttrs([]rules.Pair{{Key: "plan", Value: "free"}, {Key: "build", Value: "9.2.0"}}),
		rules.NewAttrs([]rules.Pair{{Key: "plan", Value: "pro"}, {Key: "build", Value: "9.2.0"}})
	for k := range reqs {
		reqs[k].Attrs = free
		if len(reqs[k].UID)%2 == 0 {
			reqs[k].Attrs = pro
		}
	}
	revisitMix(b, ps, reqs)
}

// revisitMix times the decisions of reqs after the first 450,000 over popups ps (the daily cap at
// 2, local answers on).
func revisitMix(b *testing.B, ps []popup.Popup, reqs []popup.Request) {
	const warm = 450000
	holder := &snapshot.Holder{}
	s := snapshot.BuildWith(1, ps, t0, popup.LinkSchemes{}, nil)
	s.Pacing = popup.Pacing{DailyCap: 2}
	if len(s.Problems) > 0 {
		b.Fatal(s.Problems)
	}
	holder.Store(s)
	d := &decide.Decider{Snapshots: holder, Users: newMemStore(), Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
		Local: decide.NewLocalAnswers(100000), Metrics: decide.NewMetrics(nil)}
	ctx := context.Background()
	// 30,000 requests a second: the time moves on as in the stack's run
	at := func(k int) time.Time { return t0.Add(time.Duration(k) * time.Second / 30000) }
	for k := range warm {
		d.Decide(ctx, reqs[k], at(k))
	}
	b.ReportAllocs()
	cpu0 := testenv.ProcessCPU(b)
	b.ResetTimer()
	for k := warm; k < warm+b.N; k++ {
		d.Decide(ctx, reqs[k], at(k))
	}
	b.StopTimer()
	b.ReportMetric(float64(testenv.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkDecideCapped is one decision of the revisit mix for a user who has reached the daily
// cap, with the local answers off so that every decision reads the state and plans (the
// in-memory store stands in for Redis): what a capped user costs when the local answer is gone
// (a new snapshot generation, an eviction, another instance).
func BenchmarkDecideCapped(b *testing.B) {
	holder := &snapshot.Holder{}
	s := snapshot.BuildWith(1, mixPopups(1000), t0, popup.LinkSchemes{}, nil)
	s.Pacing = popup.Pacing{DailyCap: 2}
	holder.Store(s)
	store := newMemStore()
	d := &decide.Decider{Snapshots: holder, Users: store, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
		Metrics: decide.NewMetrics(nil)}
	ctx := context.Background()
	req := mixRequests(1, 200000)[0]
	for range 3 {
		d.Decide(ctx, req, t0)
	}
	if a := d.Decide(ctx, req, t0); a.Kind != decide.None {
		b.Fatalf("want a capped user, got %v", a.Kind)
	}
	b.ReportAllocs()
	cpu0 := testenv.ProcessCPU(b)
	b.ResetTimer()
	for range b.N {
		d.Decide(ctx, req, t0)
	}
	b.StopTimer()
	b.ReportMetric(float64(testenv.ProcessCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
