//go:build chaos

package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Request kinds.
const (
	kindGet    = 'g'
	kindAction = 'a'
)

// outcome is one request as its client saw it.
type outcome struct {
	at, took   time.Duration // start, relative to the recorder's start; duration
	kind       byte
	status     int // 0 = transport error
	degraded   bool
	retryAfter bool
	popup      bool
	errKind    string
	id         string // impression (decision_id) or action event_id, when acknowledged
	uid        string
	// server is the part of took from the request written to the first byte of the answer: the
	// server's (and its machine's) share, the rest is the client's.
	server time.Duration
	conns  int  // connections the transport took for it (>1: it retried on a fresh one)
	reused bool // the (last) connection had served requests before: an established keep-alive one
}

// ok reports whether the outcome is the service working normally: a popup or a 202.
func (o outcome) ok() bool {
	if o.kind == kindGet {
		return o.status == http.StatusOK && !o.degraded
	}
	return o.status == http.StatusAccepted
}

// recorder collects every outcome of a scenario.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	outs  []outcome
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) add(o outcome) {
	r.mu.Lock()
	r.outs = append(r.outs, o)
	r.mu.Unlock()
}

func (r *recorder) all() []outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.outs)
}

// ackedIDs are the event ids the service acknowledged: impressions it answered with a popup and
// actions it answered 202.
func (r *recorder) ackedIDs() map[string]struct{} {
	ids := map[string]struct{}{}
	for _, o := range r.all() {
		if o.id != "" {
			ids[o.id] = struct{}{}
		}
	}
	return ids
}

// window returns the outcomes of kind that started in [from, to).
func (r *recorder) window(kind byte, from, to time.Duration) []outcome {
	var out []outcome
	for _, o := range r.all() {
		if o.kind == kind && o.at >= from && o.at < to {
			out = append(out, o)
		}
	}
	return out
}

// tally summarises a set of outcomes.
type tally struct {
	n, ok, degraded, status503, retryAfter, transportErr int
	statuses                                             map[int]int
	errs                                                 map[string]int
	maxMs, p99Ms                                         float64
	// maxServerMs is the largest server share (outcome.server) of any outcome: what the service
	// and the machine under it took, the bound a GET's budget is checked against. slowestClientMs
	// is the client's share of the slowest outcome (maxMs): the test process's own time.
	maxServerMs, slowestClientMs float64
	retried                      int
}

func tallyOf(outs []outcome) tally {
	tl := tally{statuses: map[int]int{}, errs: map[string]int{}}
	durs := make([]time.Duration, 0, len(outs))
	var slowest time.Duration
	for _, o := range outs {
		if o.took > slowest {
			slowest, tl.slowestClientMs = o.took, ms(o.took-o.server)
		}
		tl.maxServerMs = max(tl.maxServerMs, ms(o.server))
		tl.n++
		if o.ok() {
			tl.ok++
		}
		if o.degraded {
			tl.degraded++
		}
		if o.status == http.StatusServiceUnavailable {
			tl.status503++
			if o.retryAfter {
				tl.retryAfter++
			}
		}
		if o.status == 0 {
			tl.transportErr++
			tl.errs[o.errKind]++
		} else {
			tl.statuses[o.status]++
		}
		if o.conns > 1 {
			tl.retried++
		}
		durs = append(durs, o.took)
	}
	if len(durs) > 0 {
		slices.Sort(durs)
		tl.maxMs = ms(durs[len(durs)-1])
		tl.p99Ms = ms(durs[(len(durs)*99)/100])
	}
	return tl
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// statusList prints status counts as "200:12,503:3" ("-" for none).
func (tl tally) statusList() string { return countList(tl.statuses, "-") }

// errList prints transport error kinds as "refused:16,reset:1" ("0" for none).
func (tl tally) errList() string { return countList(tl.errs, "0") }

// countList prints m's counts as "k1:n1,k2:n2" in key order, or none when m is empty.
func countList[K cmp.Ordered](m map[K]int, none string) string {
	if len(m) == 0 {
		return none
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%v:%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// recoveredStretch: the service is back after a fault once this long has passed with every
// request started in it answered normally. A request that fails after that, alone, is what a
// process kept off the cores for its budget gets at any time on a busy machine
// (docs/RELIABILITY.md, "Worker killed at any instant"). The scenarios hold the requests that
// start after their recovery limit against the load before the fault (assertNotBeyondChance):
// a service that is not back, or fails again, still fails them.
const recoveredStretch = 500 * time.Millisecond

// recovery is how long after heal the service kept failing: from heal to the end of the last
// request that was not normal service before the service was back, at the start of the first
// recoveredStretch after heal in which every request started was normal, and some were (0 when
// none failed before that). It fails the test when no normal request followed.
func recovery(t *testing.T, rec *recorder, heal time.Duration) time.Duration {
	t.Helper()
	last, _, normalAfter := recoveryOf(rec.all(), heal, rec.now())
	require.True(t, normalAfter, "the service never answered normally after the fault was healed")
	return last
}

// recoveryOf reads outs, recorded by now, as recovery does: how long after heal the service kept
// failing (last); whether it is back, a recoveredStretch from heal+last in which every request
// started was normal and some were, past by another recoveredStretch so that the requests
// started in it have had time to end and be recorded (a request of a healthy service takes
// milliseconds); and whether any normal request started after heal+last.
func recoveryOf(outs []outcome, heal, now time.Duration) (last time.Duration, back, normalAfter bool) {
	var bad []outcome
	var good []time.Duration // starts of normal requests after heal
	for _, o := range outs {
		switch {
		case o.at < heal:
		case o.ok():
			good = append(good, o.at)
		default:
			bad = append(bad, o)
		}
	}
	slices.SortFunc(bad, func(a, b outcome) int { return cmp.Compare(a.at, b.at) })
	slices.Sort(good)
	normalIn := func(from, to time.Duration) bool {
		i, _ := slices.BinarySearch(good, from)
		return i < len(good) && good[i] < to
	}
	for _, o := range bad {
		if o.at >= heal+last+recoveredStretch && normalIn(heal+last, heal+last+recoveredStretch) {
			break
		}
		last = max(last, o.at+o.took-heal)
	}
	back = now >= heal+last+2*recoveredStretch && normalIn(heal+last, heal+last+recoveredStretch)
	return last, back, normalIn(heal+last, now+time.Hour)
}

// requests returns the outcomes of both kinds that started in [from, to).
func (r *recorder) requests(from, to time.Duration) []outcome {
	return append(r.window(kindGet, from, to), r.window(kindAction, from, to)...)
}

// client is one simulated app connection: its own keep-alive connection to the API.
type client struct {
	base    string
	popupID int64
	hc      *http.Client
}

func newClient(base string, popupID int64) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true, IdleConnTimeout: 30 * time.Second}
	return &client{base: base, popupID: popupID, hc: &http.Client{Transport: tr, Timeout: 3 * time.Second}}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

type getAnswer struct {
	Popup      json.RawMessage `json:"popup"`
	DecisionID string          `json:"decision_id"`
}

func (c *client) do(ctx context.Context, rec *recorder, kind byte, uid, eventID string, req *http.Request) outcome {
	o := outcome{kind: kind, uid: uid}
	var wrote time.Duration
	trace := &httptrace.ClientTrace{
		GetConn:              func(string) { o.conns++ },
		GotConn:              func(info httptrace.GotConnInfo) { o.reused = info.Reused },
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote = rec.now() },
		GotFirstResponseByte: func() { o.server = rec.now() - wrote },
	}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	o.at = rec.now()
	res, err := c.hc.Do(req)
	if err != nil {
		o.took = rec.now() - o.at
		o.errKind = errKind(err)
		return o
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	o.took = rec.now() - o.at
	if err != nil {
		o.errKind = "body:" + errKind(err)
		return o
	}
	o.status = res.StatusCode
	o.degraded = res.Header.Get("X-Popup-Degraded") == "1"
	o.retryAfter = res.Header.Get("Retry-After") != ""
	switch {
	case kind == kindGet && o.status == http.StatusOK && !o.degraded:
		var a getAnswer
		if json.Unmarshal(raw, &a) == nil && len(a.Popup) > 0 && string(a.Popup) != "null" {
			o.popup = true
			o.id = a.DecisionID
		}
	case kind == kindAction && o.status == http.StatusAccepted:
		o.id = eventID
	}
	return o
}

func (c *client) get(ctx context.Context, rec *recorder, uid string) outcome {
	req, _ := http.NewRequest(http.MethodGet, c.base+"/api/v1/popup?uid="+uid+"&platform=ios&app_version=9.1.0", nil)
	return c.do(ctx, rec, kindGet, uid, "", req)
}

func (c *client) act(ctx context.Context, rec *recorder, uid, action, eventID string) outcome {
	b := `{"uid":"` + uid + `","action":"` + action + `","event_id":"` + eventID + `"}`
	req, _ := http.NewRequest(http.MethodPost, c.base+"/api/v1/popups/"+strconv.FormatInt(c.popupID, 10)+"/actions", strings.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	return c.do(ctx, rec, kindAction, uid, eventID, req)
}

// errKind names a client-side failure: a reset of an established connection, the server closing
// it (EOF), a refused connection (nobody listening), a timeout, or something else.
func errKind(err error) string {
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EPIPE):
		return "broken_pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case strings.Contains(err.Error(), "server closed idle connection"):
		return "closed_idle"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "other(" + err.Error() + ")"
	}
}

// load is a steady, paced event load: getters ask for the popup (each answer with a popup is an
// impression event) and actors post clicks and closes with their own event ids, each over its own
// keep-alive connection and its own users, so no two clients race for one user.
type load struct {
	getters, actors int
	users           int           // users per client
	pause           time.Duration // between two requests of one client
}

func (l load) uid(kind byte, client, i int) string {
	return fmt.Sprintf("%c%d-%d", kind, client, i%l.users)
}

// warm gives every user of the load a state in Redis (and MySQL once drained): one impression
// each. Outcomes are recorded, so they count as acknowledged events. A degraded answer (a cold
// process missing its first budgets on a busy machine) recorded nothing and is asked again, as a
// client would on its next homepage open.
func (s *stack) warm(rec *recorder, l load) {
	t := s.t
	t.Helper()
	c := newClient(s.public, s.popupID)
	defer c.close()
	ctx := ctxFor(t, 60*time.Second)
	for _, kind := range []byte{kindGet, kindAction} {
		n := l.getters
		if kind == kindAction {
			n = l.actors
		}
		for cl := range n {
			for i := range l.users {
				var o outcome
				for try := 0; try < 20; try++ {
					o = c.get(ctx, rec, l.uid(kind, cl, i))
					rec.add(o)
					if !o.degraded {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				require.True(t, o.popup, "warm-up GET got no popup: status %d degraded %v err %s", o.status, o.degraded, o.errKind)
			}
		}
	}
}

// maxPerClient bounds each client's requests in count as ctx bounds them in time.
const maxPerClient = 1_000_000

// run starts the load in the background. stop ends it and returns once every client has stopped;
// it may be called more than once (deferred as well, for a test that fails half-way).
func (s *stack) run(rec *recorder, l load) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for cl := range l.getters {
		wg.Go(func() {
			c := newClient(s.public, s.popupID)
			defer c.close()
			for i := 0; i < maxPerClient && ctx.Err() == nil; i++ {
				rec.add(c.get(context.Background(), rec, l.uid(kindGet, cl, i)))
				pace(ctx, l.pause)
			}
		})
	}
	for cl := range l.actors {
		wg.Go(func() {
			c := newClient(s.public, s.popupID)
			defer c.close()
			actions := [2]string{"click", "close"}
			for i := 0; i < maxPerClient && ctx.Err() == nil; i++ {
				id := fmt.Sprintf("%s-%d-%d", s.name, cl, i)
				rec.add(c.act(context.Background(), rec, l.uid(kindAction, cl, i), actions[i%2], id))
				pace(ctx, l.pause)
			}
		})
	}
	return sync.OnceFunc(func() { cancel(); wg.Wait() })
}

func pace(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// chanceLevel: a window's failures are held against it when as many would come by chance less
// often than this (beyondChance).
const chanceLevel = 0.001

// failSlot: the service's failures are counted by the quarter-seconds in which a request that
// was not normal service started (a degraded GET, an action not accepted). A process kept off the
// cores past its budget, or a Redis that stops answering, fails every request in flight at once,
// and after five failures in a row the breaker answers degraded at once for its cooldown (250 ms):
// one event, not as many as there were requests, while a service that keeps failing fails every
// quarter-second.
const failSlot = 250 * time.Millisecond

// failures counts the quarter-seconds after from in which a request of outs that was not normal
// service started, and those requests.
func failures(outs []outcome, from time.Duration) (slots, requests int) {
	failed := map[time.Duration]bool{}
	for _, o := range outs {
		if !o.ok() {
			requests++
			failed[(o.at-from)/failSlot] = true
		}
	}
	return len(failed), requests
}

// beyondChance is how likely a window of length d would hold as many failures as bad, or more,
// by chance alone, if failures came no more often than in a control window of length ctrlD that
// held ctrlBad, under the same load on the same machine: a one-sided test of two rates given
// their total (each of the bad+ctrlBad failures falls in the window with probability
// d/(d+ctrlD)). A process kept off the cores fails requests in either window; what a fault does to
// the service shows as failures beyond chance. 1 when neither window has a failure.
func beyondChance(bad int, d time.Duration, ctrlBad int, ctrlD time.Duration) float64 {
	k := bad + ctrlBad
	if k == 0 || d <= 0 {
		return 1
	}
	p := float64(d) / float64(d+ctrlD)
	if p >= 1 {
		return 1
	}
	lk, _ := math.Lgamma(float64(k + 1))
	var tail float64
	for x := bad; x <= k; x++ {
		lx, _ := math.Lgamma(float64(x + 1))
		lr, _ := math.Lgamma(float64(k - x + 1))
		tail += math.Exp(lk - lx - lr + float64(x)*math.Log(p) + float64(k-x)*math.Log1p(-p))
	}
	return min(tail, 1)
}

// span is a window of a scenario's load, [from, to) on its recorder's clock.
type span struct{ from, to time.Duration }

// chance is what assertNotBeyondChance checks, printed per window (the window's, then the
// control's) as "failed quarter-seconds/requests not normal service/all requests", then the
// chance.
func chance(rec *recorder, window, control span) (p float64, figures string) {
	w, c := rec.requests(window.from, window.to), rec.requests(control.from, control.to)
	wm, wr := failures(w, window.from)
	cm, cr := failures(c, control.from)
	p = beyondChance(wm, window.to-window.from, cm, control.to-control.from)
	return p, fmt.Sprintf("%d/%d/%d,%d/%d/%d,%.2g", wm, wr, len(w), cm, cr, len(c), p)
}

// assertNotBeyondChance checks that the service failed no more often in window than in control
// (the quarter-seconds in which a request was not normal service: failures) beyond chance
// (beyondChance).
func assertNotBeyondChance(t *testing.T, what string, rec *recorder, window, control span) {
	t.Helper()
	require.NotEmpty(t, rec.requests(control.from, control.to), "no request in the control window of %s", what)
	p, figures := chance(rec, window, control)
	assert.GreaterOrEqual(t, p, chanceLevel, "%s: the service failed beyond chance against the control window "+
		"(failed quarter-seconds/requests not normal service/all requests, window then control, and the chance: %s)", what, figures)
}
