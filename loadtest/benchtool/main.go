// Command benchtool prepares and measures benchmark runs against a running popup-api:
//
//	benchtool seed     -admin URL -token T -n N       create N popups (varied targeting) unless some exist
//	benchtool mix      -admin URL -token T -n N       import the N popups of the revisit mix (mix.go)
//	benchtool warm     -url URL -uids N               call GET for every uid of the pool until it answers no popup
//	benchtool fill     -uids N                        the same end state written straight into Redis (POPUP_* env)
//	benchtool openloop -url URL -rate R -duration D   fixed-rate load; latency from the intended send time
//	                   [-batch N -goal G]             (POSTs of N conversions to /api/v1/conversions/batch instead of GETs)
//	benchtool wrkparse | judge -results FILE          make bench's arithmetic and verdicts (judge.go)
//	benchtool audiences | target | propagate          the audience case and its propagation (audiences.go)
//	benchtool rules    -admin URL -state on|off       rules and placements on half the popups (rules.go)
//	benchtool replace  -admin URL -id A -n N          one replace of audience A's members (audiences.go)
//
// openloop is the open-loop generator the issue asks for (vegeta is not available here): each
// request is scheduled at a fixed rate whatever the server does, and its latency is measured from
// when it should have been sent, so a stall shows in the percentiles (no coordinated omission).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"popupsvc/internal/config"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/snapshot"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool seed|mix|warm|fill|openloop|wrkparse|judge|audiences|target|rules|propagate|replace [flags] | query I")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "seed":
		err = seed(os.Args[2:])
	case "warm":
		err = warm(os.Args[2:])
	case "fill":
		err = fill(os.Args[2:])
	case "openloop":
		err = openloop(os.Args[2:])
	case "wrkparse":
		err = wrkparse(os.Args[2:])
	case "judge":
		err = judge(os.Args[2:])
	case "mix":
		err = mix(os.Args[2:])
	case "audiences":
		err = audiences(os.Args[2:])
	case "target":
		err = target(os.Args[2:])
	case "rules":
		err = rulesCmd(os.Args[2:])
	case "propagate":
		err = propagate(os.Args[2:])
	case "replace":
		err = replaceMembers(os.Args[2:])
	case "query": // the GET path and query of pool user I, as the load generators send it
		var i int
		if i, err = strconv.Atoi(strings.Join(os.Args[2:], "")); err == nil {
			fmt.Println(string(appendQuery(nil, i)))
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if errors.Is(err, errFailed) {
		os.Exit(3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func client(conns int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	}}
}

// seed creates n popups: a few broad ones and many narrowly targeted ones, as a real campaign
// list has; most requests match only a handful.
func seed(args []string) (err error) {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	admin := fs.String("admin", "http://127.0.0.1:18081", "admin base URL")
	token := fs.String("token", "", "admin token")
	n := fs.Int("n", 20, "popups to create")
	nRegions := fs.Int("regions", 8, "region codes r0..rN-1 the narrow popups spread over")
	record := fs.Bool("record", false, "also create the popup of the record runs: region \"rec\", top priority, reshow 0 (shown, and so recorded, on every call)")
	experiments := fs.Bool("experiments", false, "give every other popup (and the record popup) a running experiment: variants a and b and a control, 40/40/20")
	translations := fs.Int("translations", 0, "translate every popup (and the record popup) into this many languages (at most 8: de es fr ja pt zh-Hans ko it)")
	fs.Parse(args) // ExitOnError
	c := client(8)
	if *experiments {
		defer func() {
			if err == nil {
				err = startExperiments(c, *admin, *token)
			}
		}()
	}
	// The list comes in pages: follow next to count them all.
	var list struct{ Popups []json.RawMessage }
	for cursor := ""; ; {
		req, _ := http.NewRequest("GET", *admin+"/admin/v1/popups?limit=1000"+cursor, nil)
		req.Header.Set("Authorization", "Bearer "+*token)
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		var page struct {
			Popups []json.RawMessage
			Next   *string
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil {
			return err
		}
		list.Popups = append(list.Popups, page.Popups...)
		if page.Next == nil {
			break
		}
		cursor = "&cursor=" + *page.Next
	}
	if len(list.Popups) >= *n {
		fmt.Printf("seed: %d popups exist\n", len(list.Popups))
		return nil
	}
	if *record {
		defer func() {
			if err == nil {
				err = seedRecord(c, *admin, *token, *experiments, *translations)
			}
		}()
	}
	// One import: every popup in one transaction with one config version bump (10,000 popups
	// in seconds; one POST per popup took minutes).
	popups := make([]map[string]any, 0, *n-len(list.Popups))
	for i := len(list.Popups); i < *n; i++ {
		p := map[string]any{"name": "bench-" + strconv.Itoa(i), "priority": i % 100,
			"title": "Campaign " + strconv.Itoa(i), "content": "A benchmark popup with a realistic amount of text in it.",
			"image_url": "https://cdn.example.com/p/" + strconv.Itoa(i) + ".png", "link_url": "app://campaign/" + strconv.Itoa(i),
			"buttons": []map[string]string{{"text": "Open", "link_url": "app://campaign/" + strconv.Itoa(i)}, {"text": "Later"}}}
		t := map[string]any{}
		switch {
		case i < 5: // broad campaigns everybody may see
			t["rollout_percent"] = 100
		default: // narrow ones: a platform, a region, a version floor
			t["platforms"] = []string{platforms[i%3]}
			t["regions"] = []string{"r" + strconv.Itoa(i%*nRegions)}
			t["min_app_version"] = "8." + strconv.Itoa(i%12) + ".0"
			t["rollout_percent"] = 10 + i%90
		}
		p["targeting"] = t
		if *experiments && i%2 == 0 {
			p["experiment"] = benchExperiment(i)
		}
		addTranslations(p, *translations)
		popups = append(popups, p)
	}
	body, _ := json.Marshal(map[string]any{"popups": popups})
	req, _ := http.NewRequest("POST", *admin+"/admin/v1/import?dry_run=false", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+*token)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("import: %s: %s", res.Status, answer)
	}
	fmt.Printf("seed: created %d popups\n", *n-len(list.Popups))
	return nil
}

// seedRecord creates the popup that every request with region=rec gets, every time: each such GET
// runs the record script (state write + queued impression).
func seedRecord(c *http.Client, admin, token string, experiment bool, translations int) error {
	p := map[string]any{"name": "bench-record", "priority": 1000, "title": "Recorded every time",
		"content": "A popup of the record benchmark.", "image_url": "https://cdn.example.com/p/rec.png",
		"link_url": "app://campaign/rec", "reshow_after_seconds": 0,
		"targeting": map[string]any{"regions": []string{"rec"}, "rollout_percent": 100}}
	if experiment {
		p["experiment"] = benchExperiment(-1)
	}
	addTranslations(p, translations)
	body, _ := json.Marshal(p)
	req, _ := http.NewRequest("POST", admin+"/admin/v1/popups", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("creating the record popup: %s: %s", res.Status, b)
	}
	fmt.Println("seed: created the record popup (region rec)")
	return nil
}

// benchExperiment is the experiment of bench popup i (-1: the record popup): two variants of the
// same size as the popup's own content and a control that shows nothing, 40/40/20.
// benchLocales are the languages seed -translations gives popups, in order.
var benchLocales = []string{"de", "es", "fr", "ja", "pt", "zh-Hans", "ko", "it"}

// addTranslations translates popup p's own content into the first n of benchLocales: a title, a
// content and one text per button, as long as the default's.
func addTranslations(p map[string]any, n int) {
	if n <= 0 {
		return
	}
	buttons, _ := p["buttons"].([]map[string]string)
	tr := map[string]any{}
	for _, l := range benchLocales[:min(n, len(benchLocales))] {
		bs := make([]map[string]string, len(buttons))
		for i, b := range buttons {
			bs[i] = map[string]string{"text": b["text"] + " (" + l + ")"}
		}
		tr[l] = map[string]any{"title": p["title"].(string) + " (" + l + ")", "content": p["content"].(string) + " (" + l + ")", "buttons": bs}
	}
	p["translations"] = tr
}

func benchExperiment(i int) map[string]any {
	variant := func(key string) map[string]any {
		return map[string]any{"key": key, "weight": 40, "title": "Campaign " + strconv.Itoa(i) + key,
			"content":   "A benchmark variant with a realistic amount of text in it.",
			"image_url": "https://cdn.example.com/p/" + strconv.Itoa(i) + key + ".png", "link_url": "app://campaign/" + strconv.Itoa(i),
			"buttons": []map[string]string{{"text": "Open", "link_url": "app://campaign/" + strconv.Itoa(i)}, {"text": "Later"}}}
	}
	return map[string]any{"variants": []map[string]any{variant("a"), variant("b")}, "control": map[string]any{"weight": 20, "mode": "none"}}
}

// startExperiments starts every draft experiment (seed creates them as drafts, as every new
// experiment is).
func startExperiments(c *http.Client, admin, token string) error {
	started := 0
	for cursor := ""; ; {
		req, _ := http.NewRequest("GET", admin+"/admin/v1/popups?limit=1000"+cursor, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		var page struct {
			Popups []struct {
				ID         int64
				Experiment *struct{ Status string }
			}
			Next *string
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil {
			return err
		}
		for _, p := range page.Popups {
			if p.Experiment == nil || p.Experiment.Status != "draft" {
				continue
			}
			req, _ := http.NewRequest("POST", admin+"/admin/v1/popups/"+strconv.FormatInt(p.ID, 10)+"/experiment/start", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := c.Do(req)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("starting popup %d's experiment: %s: %s", p.ID, res.Status, b)
			}
			started++
		}
		if page.Next == nil {
			break
		}
		cursor = "&cursor=" + *page.Next
	}
	fmt.Printf("seed: started %d experiments\n", started)
	return nil
}

// regions is the number of region codes users are spread over (BENCH_REGIONS, as in bench.lua).
var regions = func() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_REGIONS")); err == nil && n > 0 {
		return n
	}
	return 8
}()

// benchAttrs: BENCH_ATTRS=1 adds the attributes run K's rules read to every GET (as in bench.lua).
var benchAttrs = os.Getenv("BENCH_ATTRS") == "1"

// query builds the GET query of pool user i: a stable platform/version/region per user, the same
// mapping as loadtest/bench.lua.
func query(base string, i int) string {
	return base + string(appendQuery(nil, i))
}

var platforms = [...]string{"ios", "android", "web"}

// warm calls GET for every uid of the pool until it answers no popup (at most -tries times), so the
// benchmark then measures warm users.
func warm(args []string) error {
	fs := flag.NewFlagSet("warm", flag.ExitOnError)
	url := fs.String("url", "http://127.0.0.1:18080", "public base URL")
	uids := fs.Int("uids", 100000, "uid pool size")
	conns := fs.Int("c", 64, "concurrent connections")
	tries := fs.Int("tries", 30, "calls per uid at most (a user may be eligible for several popups)")
	quiet := fs.Int("quiet", 1, "no-popup answers in a row that end a uid's warm-up: with experiments, a control user's answer is no popup while lower popups can still show (each control exposure hides only its own popup), so one is not the steady state")
	fs.Parse(args) // ExitOnError
	c := client(*conns)
	jobs := make(chan int, 1024)
	var wg sync.WaitGroup
	var calls, errs, degraded atomic.Int64
	began := time.Now()
	for w := 0; w < *conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				for try, nulls := 0, 0; try < *tries; try++ {
					calls.Add(1)
					res, err := c.Get(query(*url, i))
					if err != nil {
						errs.Add(1)
						break
					}
					body, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != 200 {
						errs.Add(1)
						break
					}
					if res.Header.Get("X-Popup-Degraded") != "" {
						// Not an answer about this user: back off a little and ask again.
						degraded.Add(1)
						time.Sleep(20 * time.Millisecond)
						continue
					}
					if !bytes.HasPrefix(body, []byte(`{"popup":null`)) {
						nulls = 0
					} else if nulls++; nulls >= *quiet {
						break
					}
				}
			}
		}()
	}
	for i := 0; i < *uids; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	fmt.Printf("warm: %d uids, %d calls, %d errors, %d degraded answers in %s\n", *uids, calls.Load(), errs.Load(), degraded.Load(), time.Since(began).Round(time.Millisecond))
	if errs.Load() > 0 {
		return fmt.Errorf("%d errors while warming", errs.Load())
	}
	return nil
}

// fill gives every pool user the state that warm would leave behind (every popup the user may see
// has been shown once, so the next GET answers no popup), computed with the service's own
// selection code and written with pipelined SETs: a million users take seconds instead of the
// minutes of millions of GETs, and the worker has no warm-up backlog to drain. It reads the config
// cache and the key layout the API uses from the same POPUP_* environment.
func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	uids := fs.Int("uids", 100000, "uid pool size")
	workers := fs.Int("c", 4, "concurrent pipelines")
	want := fs.Int("want", 1, "popups the config cache must hold first")
	fs.Parse(args) // ExitOnError
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	// A bulk load of big pipelines, not the hot path: the service's 50 ms Redis timeout would
	// fail a pipeline that waits behind Redis's AOF work (it did once, at a million users).
	cfg.RedisTimeout = 10 * time.Second
	rdb, err := redisstore.NewClient(redisstore.OptionsOf(cfg))
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	keys := redisstore.Keys{Prefix: cfg.RedisPrefix, Shards: cfg.Shards()}
	// Admin writes reach the cache asynchronously: wait (10 s at most) until it holds -want popups.
	var version int64
	var popups []popup.Popup
	for try := 0; ; try++ {
		version, popups, _, _, err = redisstore.NewConfigCache(rdb, keys).Load(ctx)
		if err == nil && len(popups) >= *want {
			break
		}
		if try == 100 {
			return fmt.Errorf("the config cache holds %d popups (err %v), want %d", len(popups), err, *want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	now := time.Now()
	snap := snapshot.BuildWith(version, popups, now, cfg.Links(), nil) // as popup-api builds it: its app:// links need POPUP_LINK_SCHEMES
	began := time.Now()
	var shown atomic.Int64
	jobs := make(chan int, 16)
	errc := make(chan error, *workers)
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := range jobs {
				pipe := rdb.Pipeline()
				for i := first; i < min(first+1000, *uids); i++ {
					ver, _ := popup.ParseVersion("8." + strconv.Itoa(i%13) + ".0")
					r := popup.Request{UID: "user-" + strconv.Itoa(i), Platform: platforms[i%3], AppVersion: ver,
						Region: "r" + strconv.Itoa(i%regions), Lang: "en"}
					var st popup.UserState
					cands := snap.Candidates(&r)
					for n := 0; n < len(cands); n++ {
						c := popup.Select(cands, r, &st, now, popup.Pacing{DailyCap: cfg.UserDailyCap})
						if c == nil {
							break
						}
						c.ApplyImpression(&st, now)
						shown.Add(1)
					}
					pipe.Set(ctx, keys.User(r.UID), redisstore.AppendState(nil, &st), cfg.UserStateTTL)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for i := 0; i < *uids; i += 1000 {
		select {
		case jobs <- i:
		case err := <-errc:
			close(jobs)
			wg.Wait()
			return err
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	fmt.Printf("fill: %d uids over %d popups (config version %d), %d impressions marked, in %s\n",
		*uids, len(snap.Ordered), version, shown.Load(), time.Since(began).Round(time.Millisecond))
	return nil
}

// openloop sends requests on a fixed schedule and reports latency percentiles measured from each
// request's intended send time, plus errors, non-2xx and degraded answers.
//
// It works like wrk2: -c keep-alive connections each own every c-th slot of the schedule. A
// connection that is still waiting for an answer when its next slot comes sends late, and that
// request's latency still counts from its slot, so a stalled server shows in the percentiles (no
// coordinated omission) instead of the schedule quietly slowing down. HTTP/1.1 is written and
// parsed by hand (no net/http client): the generator shares the machine's cores with the server
// it measures, and every microsecond it spends is one the server does not get.
func openloop(args []string) error {
	fs := flag.NewFlagSet("openloop", flag.ExitOnError)
	target := fs.String("url", "http://127.0.0.1:18080", "public base URL (a reference server ignores the query)")
	rate := fs.Int("rate", 5000, "requests per second")
	dur := fs.Duration("duration", 10*time.Second, "how long to send")
	uids := fs.Int("uids", 100000, "uid pool size")
	conns := fs.Int("c", 64, "keep-alive connections")
	procs := fs.Int("procs", 1, "GOMAXPROCS of the generator (it shares the cores with the server)")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	hist := fs.String("hist", "", "write latency percentiles (0-100 in 0.1 steps) to this CSV file")
	raw := fs.String("raw", "", "append each answered request's intended send time (Unix ns) and latency (ns) to this file, one request a line")
	batch := fs.Int("batch", 0, "0: GET /api/v1/popup; N: POST /api/v1/conversions/batch with N conversions (1-500) of random pool users")
	goal := fs.String("goal", "bench", "the goal of -batch's conversions")
	fs.Parse(args) // ExitOnError
	runtime.GOMAXPROCS(*procs)
	u, err := neturl.Parse(*target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-url must be http://host:port[/path], got %q", *target)
	}
	if *rate <= 0 || *conns <= 0 || *dur <= 0 {
		return fmt.Errorf("-rate, -c and -duration must be positive")
	}
	if *batch < 0 || *batch > 500 {
		return fmt.Errorf("-batch must be 0 (GETs) or 1-500 conversions a request")
	}
	// Event ids no earlier run used: this run's start, the connection and a counter.
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	total := int(float64(*rate) * dur.Seconds())
	lat := make([]time.Duration, total) // slot i's latency; -1 = failed
	var non2xx, errs, degraded, late atomic.Int64
	interval := float64(time.Second) / float64(*rate)
	start := time.Now().Add(20 * time.Millisecond)
	var wg sync.WaitGroup
	for k := 0; k < min(*conns, total); k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			lc := loadConn{addr: u.Host, path: strings.TrimSuffix(u.Path, "/"), batch: *batch, goal: *goal, uids: *uids,
				eventPrefix: "ol" + runID + "c" + strconv.Itoa(k) + "n"}
			defer lc.close()
			for i := k; i < total; i += *conns {
				due := start.Add(time.Duration(float64(i) * interval))
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				} else if d < -time.Millisecond {
					late.Add(1)
				}
				status, deg, err := lc.send(rand.IntN(*uids))
				if err != nil {
					errs.Add(1)
					lat[i] = -1
					continue
				}
				lat[i] = time.Since(due)
				if status/100 != 2 {
					non2xx.Add(1)
				}
				if deg {
					degraded.Add(1)
				}
			}
		}(k)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if *raw != "" { // before ok below reuses lat's array
		if err := appendRaw(*raw, start, interval, lat); err != nil {
			return err
		}
	}
	ok := lat[:0]
	for _, l := range lat {
		if l >= 0 {
			ok = append(ok, l)
		}
	}
	slices.Sort(ok)
	pct := func(p float64) float64 {
		if len(ok) == 0 {
			return 0
		}
		return float64(ok[min(len(ok)-1, int(p*float64(len(ok))))]) / 1e6
	}
	if *hist != "" {
		var buf bytes.Buffer
		buf.WriteString("percentile,latency_ms\n")
		for p := 0; p <= 1000; p++ {
			fmt.Fprintf(&buf, "%.1f,%.4f\n", float64(p)/10, pct(float64(p)/1000))
		}
		if err := os.WriteFile(*hist, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	out := map[string]any{"rate": *rate, "batch": *batch, "conns": *conns, "duration_s": dur.Seconds(), "sent": total, "completed": len(ok), "errors": errs.Load(), "non_2xx": non2xx.Load(),
		"degraded": degraded.Load(), "late": late.Load(), "elapsed_s": elapsed.Seconds(), "p50_ms": pct(.5), "p90_ms": pct(.9), "p99_ms": pct(.99),
		"p999_ms": pct(.999), "max_ms": pct(1)}
	if *jsonOut {
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	fmt.Printf("openloop: rate %d/s for %s over %d conns: sent %d completed %d errors %d non-2xx %d degraded %d late(>1ms) %d | p50 %.2f ms p90 %.2f p99 %.2f p99.9 %.2f max %.2f\n",
		*rate, *dur, *conns, total, len(ok), errs.Load(), non2xx.Load(), degraded.Load(), late.Load(), pct(.5), pct(.9), pct(.99), pct(.999), pct(1))
	return nil
}

// appendRaw appends to file, for each slot i answered (lat[i] >= 0), its intended send time in
// Unix nanoseconds and its latency in nanoseconds: the raw readings a caller pools across runs,
// or cuts at instants of its own (make bench-upload's upload).
func appendRaw(file string, start time.Time, interval float64, lat []time.Duration) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	t0 := start.UnixNano()
	for i, l := range lat {
		if l >= 0 {
			fmt.Fprintf(w, "%d %d\n", t0+int64(float64(i)*interval), int64(l))
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Header names and values openloop looks for, compared case-insensitively.
var (
	hContentLength    = []byte("content-length")
	hDegraded         = []byte("x-popup-degraded")
	hConnection       = []byte("connection")
	hTransferEncoding = []byte("transfer-encoding")
	vClose            = []byte("close")
)

// loadConn is one keep-alive HTTP/1.1 connection of openloop, reconnecting after any error.
type loadConn struct {
	addr, path string
	c          net.Conn
	r          *bufio.Reader
	buf        []byte
	// batch > 0: each request is a POST of batch conversions of goal, for random users of the
	// pool of uids, with event ids eventPrefix + a counter.
	batch       int
	goal        string
	uids        int
	eventPrefix string
	events      int64
	body        []byte
}

func (l *loadConn) close() {
	if l.c != nil {
		l.c.Close()
		l.c = nil
	}
}

// send sends pool user i's GET (or a batch of conversions) and reads the answer: its status and
// whether it was degraded.
func (l *loadConn) send(i int) (status int, degraded bool, err error) {
	if l.c == nil {
		if l.c, err = net.DialTimeout("tcp", l.addr, 2*time.Second); err != nil {
			return 0, false, err
		}
		if l.r == nil {
			l.r = bufio.NewReaderSize(l.c, 4096)
		} else {
			l.r.Reset(l.c)
		}
	}
	status, degraded, err = l.roundTrip(i)
	if err != nil {
		l.close()
	}
	return status, degraded, err
}

func (l *loadConn) roundTrip(i int) (status int, degraded bool, err error) {
	var b []byte
	if l.batch > 0 {
		l.body = l.appendBatch(l.body[:0], i)
		b = append(l.buf[:0], "POST "...)
		b = append(append(b, l.path...), "/api/v1/conversions/batch HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(l.body)), 10)
		b = append(b, "\r\nHost: "...)
	} else {
		b = append(l.buf[:0], "GET "...)
		b = appendQuery(append(b, l.path...), i)
		b = append(b, " HTTP/1.1\r\nHost: "...)
	}
	b = append(b, l.addr...)
	b = append(b, "\r\nUser-Agent: benchtool\r\n\r\n"...)
	b = append(b, l.body...)
	l.buf = b
	if err = l.c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return 0, false, err
	}
	if _, err = l.c.Write(b); err != nil {
		return 0, false, err
	}
	line, err := l.r.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	length, closing := -1, false
	for {
		h, err := l.r.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		if len(h) <= 2 { // the blank line ending the header
			break
		}
		name, value, _ := bytes.Cut(bytes.TrimRight(h, "\r\n"), []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, hContentLength):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, hDegraded):
			degraded = true
		case bytes.EqualFold(name, hConnection):
			closing = bytes.EqualFold(value, vClose)
		case bytes.EqualFold(name, hTransferEncoding):
			return 0, false, fmt.Errorf("Transfer-Encoding %q is not supported by openloop", value)
		}
	}
	if length < 0 {
		return 0, false, fmt.Errorf("answer without Content-Length")
	}
	if _, err = l.r.Discard(length); err != nil {
		return 0, false, err
	}
	if closing {
		l.close()
	}
	return status, degraded, nil
}

// appendBatch appends the body of a batch of l.batch conversions, the first of pool user i, the
// others of random pool users, each with an event id of its own and no value (a value needs an
// ingest key, docs/CONTRACT.md §14).
func (l *loadConn) appendBatch(b []byte, i int) []byte {
	b = append(b, `{"conversions":[`...)
	for k := range l.batch {
		if k > 0 {
			b = append(b, ',')
			i = rand.IntN(l.uids)
		}
		l.events++
		b = append(b, `{"uid":"user-`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","goal":"`...)
		b = append(b, l.goal...)
		b = append(b, `","event_id":"`...)
		b = strconv.AppendInt(append(b, l.eventPrefix...), l.events, 10)
		b = append(b, `"}`...)
	}
	return append(b, "]}"...)
}

// appendQuery appends pool user i's "/api/v1/popup?..." path and query (see query).
func appendQuery(b []byte, i int) []byte {
	b = append(b, "/api/v1/popup?uid=user-"...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, "&platform="...)
	b = append(b, platforms[i%3]...)
	b = append(b, "&app_version=8."...)
	b = strconv.AppendInt(b, int64(i%13), 10)
	b = append(b, ".0&region=r"...)
	b = strconv.AppendInt(b, int64(i%regions), 10)
	b = append(b, "&lang=en"...)
	if benchAttrs {
		b = appendAttrs(b, i)
	}
	return b
}

// appendAttrs appends user i's attributes as bench.lua's BENCH_ATTRS=1 sends them: plan pro for
// an even uid and free for an odd one, build 9.2.0.
func appendAttrs(b []byte, i int) []byte {
	plan := "pro"
	if i%2 != 0 {
		plan = "free"
	}
	return append(append(append(b, "&attr.plan="...), plan...), "&attr.build=9.2.0"...)
}
