// Command benchtool prepares and measures benchmark runs against a running popup-api:
//
//	benchtool seed     -admin URL -token T -n N       create N popups (varied targeting) unless some exist
//	benchtool warm     -url URL -uids N               call GET once for every uid of the pool
//	benchtool openloop -url URL -rate R -duration D   fixed-rate load; latency from the intended send time
//
// openloop is the open-loop generator the issue asks for (vegeta is not available here): each
// request is scheduled at a fixed rate whatever the server does, and its latency is measured from
// when it should have been sent, so a stall shows in the percentiles (no coordinated omission).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool seed|warm|openloop [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "seed":
		err = seed(os.Args[2:])
	case "warm":
		err = warm(os.Args[2:])
	case "openloop":
		err = openloop(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
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
func seed(args []string) error {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	admin := fs.String("admin", "http://127.0.0.1:18081", "admin base URL")
	token := fs.String("token", "", "admin token")
	n := fs.Int("n", 20, "popups to create")
	nRegions := fs.Int("regions", 8, "region codes r0..rN-1 the narrow popups spread over")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	c := client(8)
	req, _ := http.NewRequest("GET", *admin+"/admin/v1/popups", nil)
	req.Header.Set("Authorization", "Bearer "+*token)
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	var list struct{ Popups []json.RawMessage }
	err = json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if err != nil {
		return err
	}
	if len(list.Popups) >= *n {
		fmt.Printf("seed: %d popups exist\n", len(list.Popups))
		return nil
	}
	platforms := []string{"ios", "android", "web"}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
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
				body, _ := json.Marshal(p)
				req, _ := http.NewRequest("POST", *admin+"/admin/v1/popups", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+*token)
				req.Header.Set("Content-Type", "application/json")
				res, err := c.Do(req)
				if err != nil || res.StatusCode != http.StatusCreated {
					failed.Add(1)
				}
				if res != nil {
					io.Copy(io.Discard, res.Body) //nolint:errcheck
					res.Body.Close()
				}
			}
		}()
	}
	for i := len(list.Popups); i < *n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if failed.Load() > 0 {
		return fmt.Errorf("%d popups failed to create", failed.Load())
	}
	fmt.Printf("seed: created %d popups\n", *n-len(list.Popups))
	return nil
}

// regions is the number of region codes users are spread over (BENCH_REGIONS, as in bench.lua).
var regions = func() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_REGIONS")); err == nil && n > 0 {
		return n
	}
	return 8
}()

// query builds the GET query of pool user i: a stable platform/version/region per user, the same
// mapping as loadtest/bench.lua.
func query(base string, i int) string {
	platforms := [...]string{"ios", "android", "web"}
	return base + "/api/v1/popup?uid=user-" + strconv.Itoa(i) + "&platform=" + platforms[i%3] +
		"&app_version=8." + strconv.Itoa(i%13) + ".0&region=r" + strconv.Itoa(i%regions) + "&lang=en"
}

// warm calls GET for every uid of the pool until it answers no popup (at most -tries times), so the
// benchmark then measures warm users.
func warm(args []string) error {
	fs := flag.NewFlagSet("warm", flag.ExitOnError)
	url := fs.String("url", "http://127.0.0.1:18080", "public base URL")
	uids := fs.Int("uids", 100000, "uid pool size")
	conns := fs.Int("c", 64, "concurrent connections")
	tries := fs.Int("tries", 30, "calls per uid at most (a user may be eligible for several popups)")
	fs.Parse(args) //nolint:errcheck
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
				for try := 0; try < *tries; try++ {
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
					if bytes.HasPrefix(body, []byte(`{"popup":null`)) {
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

// openloop sends requests at a fixed rate and reports latency percentiles from the intended send
// times, plus errors and non-2xx answers.
func openloop(args []string) error {
	fs := flag.NewFlagSet("openloop", flag.ExitOnError)
	url := fs.String("url", "http://127.0.0.1:18080", "public base URL (a reference server ignores the query)")
	rate := fs.Int("rate", 5000, "requests per second")
	dur := fs.Duration("duration", 10*time.Second, "how long to send")
	uids := fs.Int("uids", 100000, "uid pool size")
	conns := fs.Int("c", 256, "max connections (and in-flight requests)")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	hist := fs.String("hist", "", "write latency percentiles (0-100 in 0.1 steps) to this CSV file")
	fs.Parse(args) //nolint:errcheck
	c := client(*conns)
	total := int(float64(*rate) * dur.Seconds())
	lat := make([]time.Duration, total)
	var non2xx, errs, dropped, degraded atomic.Int64
	sem := make(chan struct{}, *conns)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), *dur+15*time.Second)
	defer cancel()
	interval := time.Second / time.Duration(*rate)
	start := time.Now()
	for i := 0; i < total; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		select {
		case sem <- struct{}{}:
		default:
			// Every connection busy: the request would have to wait; count it as missed at the
			// deadline rather than silently slowing the schedule down.
			dropped.Add(1)
			lat[i] = -1
			continue
		}
		wg.Add(1)
		go func(i int, due time.Time) {
			defer wg.Done()
			defer func() { <-sem }()
			req, _ := http.NewRequestWithContext(ctx, "GET", query(*url, rand.IntN(*uids)), nil)
			res, err := c.Do(req)
			if err != nil {
				errs.Add(1)
				lat[i] = -1
				return
			}
			io.Copy(io.Discard, res.Body) //nolint:errcheck
			res.Body.Close()
			lat[i] = time.Since(due)
			if res.StatusCode/100 != 2 {
				non2xx.Add(1)
			}
			if res.Header.Get("X-Popup-Degraded") != "" {
				degraded.Add(1)
			}
		}(i, due)
	}
	wg.Wait()
	elapsed := time.Since(start)
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
	out := map[string]any{"rate": *rate, "sent": total, "completed": len(ok), "errors": errs.Load(), "non_2xx": non2xx.Load(), "degraded": degraded.Load(),
		"dropped": dropped.Load(), "elapsed_s": elapsed.Seconds(), "p50_ms": pct(.5), "p90_ms": pct(.9), "p99_ms": pct(.99), "p999_ms": pct(.999),
		"max_ms": pct(1)}
	if *jsonOut {
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	fmt.Printf("openloop: rate %d/s for %s: sent %d completed %d errors %d non-2xx %d degraded %d dropped %d | p50 %.2f ms p90 %.2f p99 %.2f p99.9 %.2f max %.2f\n",
		*rate, *dur, total, len(ok), errs.Load(), non2xx.Load(), degraded.Load(), dropped.Load(), pct(.5), pct(.9), pct(.99), pct(.999), pct(1))
	return nil
}
