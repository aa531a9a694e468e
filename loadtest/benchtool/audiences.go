package main

// benchtool's audience commands (issue 34): bench-only, against a running popup-api's admin API.
//
//	benchtool audiences -admin URL -token T -uids N -size S   create bench-include (every pool user, then
//	                    others up to S) and bench-exclude (S ids, no pool user), streamed as text/plain;
//	                    prints "INCLUDE_ID EXCLUDE_ID"
//	benchtool target    -admin URL -token T -metrics URL -include I -exclude E -state on|off
//	                    put (or take off) targeting.audiences on every other bench popup in one import,
//	                    then wait until the API at -metrics serves it
//	benchtool replace   -admin URL -token T -id A -n N -prefix P
//	                    replace audience A's members with N uids P0 … P(N-1), streamed as text/plain;
//	                    prints the upload's wall time, the audience's size and the CPU seconds this
//	                    process spent producing the body as JSON (bench-upload.sh)
//	benchtool propagate -admin1 URL -metrics1 URL -admin2 URL -public2 URL -metrics2 URL -token T
//	                    a 10M replace and a 10k delta through instance 1, timed until instance 2 serves
//	                    them; prints one "propagate" results line per write (judge.go does the arithmetic)

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// adminClient calls one popup-api's admin API.
type adminClient struct {
	base, token string
	c           *http.Client
}

func newAdmin(base, token string) adminClient {
	// An upload of ten million lines and the import of ten thousand popups take minutes at worst.
	return adminClient{base: base, token: token, c: &http.Client{Timeout: 10 * time.Minute}}
}

// do sends a request and decodes a JSON answer of status want into out (nil: discard).
func (a adminClient) do(method, path, contentType string, body io.Reader, want int, out any) error {
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := a.c.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
		return fmt.Errorf("%s %s: %s: %s", method, path, res.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, res.Body)
		return err
	}
	return json.NewDecoder(res.Body).Decode(out)
}

func (a adminClient) json(method, path string, in any, want int, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return a.do(method, path, "application/json", bytes.NewReader(b), want, out)
}

// audienceInfo is the part of an audience's admin answer the bench reads.
type audienceInfo struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
	Size    int64  `json:"size"`
}

// ensureAudience returns the audience called name, creating it when there is none.
func (a adminClient) ensureAudience(name string) (audienceInfo, error) {
	var list struct{ Audiences []audienceInfo }
	if err := a.do("GET", "/admin/v1/audiences", "", nil, http.StatusOK, &list); err != nil {
		return audienceInfo{}, err
	}
	for _, au := range list.Audiences {
		if au.Name == name {
			return au, nil
		}
	}
	var au audienceInfo
	err := a.json("POST", "/admin/v1/audiences", map[string]string{"name": name, "description": "make bench"}, http.StatusCreated, &au)
	return au, err
}

// uidLines writes one uid a line: prefix+i for i in [from, to).
func uidLines(w *bufio.Writer, prefix string, from, to int) {
	var b []byte
	for i := from; i < to; i++ {
		b = strconv.AppendInt(append(b[:0], prefix...), int64(i), 10)
		w.Write(append(b, '\n'))
	}
}

// writeMembers streams the lines gen writes as the body of a member write (path: "" for the
// replace, "/add" for a delta) and returns the audience the write left.
func (a adminClient) writeMembers(id int64, path string, gen func(*bufio.Writer)) (audienceInfo, error) {
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 256<<10)
		gen(w)
		pw.CloseWithError(w.Flush())
	}()
	method := "POST"
	if path == "" {
		method = "PUT"
	}
	var au audienceInfo
	err := a.do(method, "/admin/v1/audiences/"+strconv.FormatInt(id, 10)+"/members"+path, "text/plain", pr, http.StatusOK, &au)
	pr.Close()
	return au, err
}

// audiences creates the two audiences of the steady-state case: bench users pass both checks.
func audiences(args []string) error {
	fs := flag.NewFlagSet("audiences", flag.ExitOnError)
	admin := fs.String("admin", "http://127.0.0.1:18081", "admin base URL")
	token := fs.String("token", "", "admin token")
	uids := fs.Int("uids", 100000, "uid pool size (user-0 … user-N-1): every one is in the include audience")
	size := fs.Int("size", 1_000_000, "members of each audience (the include one holds at least the pool)")
	fs.Parse(args) // ExitOnError
	a := newAdmin(*admin, *token)
	lists := []struct {
		name string
		gen  func(*bufio.Writer)
	}{
		{"bench-include", func(w *bufio.Writer) {
			uidLines(w, "user-", 0, *uids)
			uidLines(w, "aud-in-", 0, *size-*uids) // nothing when the pool fills it
		}},
		{"bench-exclude", func(w *bufio.Writer) { uidLines(w, "aud-ex-", 0, *size) }},
	}
	var ids []string
	for _, l := range lists {
		au, err := a.ensureAudience(l.name)
		if err != nil {
			return err
		}
		began := time.Now()
		if au, err = a.writeMembers(au.ID, "", l.gen); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "audiences: %s (id %d) version %d, %d members, uploaded in %s\n",
			l.name, au.ID, au.Version, au.Size, time.Since(began).Round(time.Millisecond))
		ids = append(ids, strconv.FormatInt(au.ID, 10))
	}
	fmt.Println(strings.Join(ids, " "))
	return nil
}

// benchHalf reports whether the popup called name is one of the half of the bench popups that
// the audience case targets: bench-0, bench-2, … (the record popup is not).
func benchHalf(name string) bool { return evenNamed(name, "bench-") }

// evenNamed reports whether name is prefix followed by an even number: half of the popups that
// benchtool seed (bench-N) or mix (mix-N) created.
func evenNamed(name, prefix string) bool {
	n, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(n)
	return err == nil && i%2 == 0
}

// switchFlags are the flags of a command that switches something on or off through one import
// (target, rules) and waits for the APIs to serve it.
type switchFlags struct {
	adminURL, token, metrics, state *string
	timeout                         *time.Duration
}

func newSwitchFlags(fs *flag.FlagSet, stateUsage string) switchFlags {
	return switchFlags{
		adminURL: fs.String("admin", "http://127.0.0.1:18081", "admin base URL"),
		token:    fs.String("token", "", "admin token"),
		metrics:  fs.String("metrics", "", "/metrics URLs (comma-separated) of the APIs to wait for; default: -admin's"),
		state:    fs.String("state", "", stateUsage),
		timeout:  fs.Duration("timeout", 60*time.Second, "how long to wait for the APIs to serve it"),
	}
}

// parse parses args (fs exits on a bad flag) and checks -state.
func (f switchFlags) parse(fs *flag.FlagSet, args []string) error {
	fs.Parse(args) // ExitOnError
	if *f.state != "on" && *f.state != "off" {
		return fmt.Errorf("-state must be on or off, got %q", *f.state)
	}
	return nil
}

// admin is the admin API's client and the /metrics URLs to wait on: -metrics's list, or the admin
// API's own when it is empty.
func (f switchFlags) admin() (adminClient, []string) {
	urls := []string{*f.adminURL + "/metrics"}
	if *f.metrics != "" {
		urls = strings.Split(*f.metrics, ",")
	}
	return newAdmin(*f.adminURL, *f.token), urls
}

// reimport exports the config, lets edit change its popups (edit returns how many it changed),
// imports the whole list back in one import, one config version, and waits until every API at
// urls serves that version with every audience bound. It returns edit's count, the import's
// updated count and how long the APIs took to serve it.
func (a adminClient) reimport(urls []string, timeout time.Duration, edit func([]map[string]any) int) (n, updated int, took time.Duration, err error) {
	before := make([]float64, len(urls))
	for i, u := range urls {
		m, err := a.metrics(u)
		if err != nil {
			return 0, 0, 0, err
		}
		before[i] = m["popup_snapshot_version"]
	}
	var export struct {
		Popups []map[string]any `json:"popups"`
	}
	if err := a.do("GET", "/admin/v1/export", "", nil, http.StatusOK, &export); err != nil {
		return 0, 0, 0, err
	}
	n = edit(export.Popups)
	var answer struct{ Created, Updated, Unchanged int }
	if err := a.json("POST", "/admin/v1/import?dry_run=false", map[string]any{"popups": export.Popups}, http.StatusOK, &answer); err != nil {
		return 0, 0, 0, err
	}
	began := time.Now()
	for i, u := range urls {
		for {
			m, err := a.metrics(u)
			if err != nil {
				return 0, 0, 0, err
			}
			// A changed import is one version bump; an unchanged one is none, and nothing to wait for.
			if (answer.Updated == 0 || m["popup_snapshot_version"] > before[i]) && m["popup_audience_unbound_popups"] == 0 {
				break
			}
			if time.Since(began) > timeout {
				return 0, 0, 0, fmt.Errorf("%s: after %s the snapshot is version %g (was %g) with %g popups of audiences not held",
					u, timeout, m["popup_snapshot_version"], before[i], m["popup_audience_unbound_popups"])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return n, answer.Updated, time.Since(began), nil
}

// target puts targeting.audiences on half the bench popups (or takes it off) in one import, one
// config version, and waits until the API serves that version with every audience bound.
func target(args []string) error {
	fs := flag.NewFlagSet("target", flag.ExitOnError)
	sw := newSwitchFlags(fs, "on: target the audiences; off: take the targeting off")
	include := fs.Int64("include", 0, "include audience id")
	exclude := fs.Int64("exclude", 0, "exclude audience id")
	if err := sw.parse(fs, args); err != nil {
		return err
	}
	a, urls := sw.admin()
	for _, u := range urls {
		m, err := a.metrics(u)
		if err != nil {
			return err
		}
		if _, ok := m["popup_audience_unbound_popups"]; !ok {
			return errNoLoader(u)
		}
	}
	refs := map[string][]int64{"include": {}, "exclude": {}}
	if *sw.state == "on" {
		refs = map[string][]int64{"include": {*include}, "exclude": {*exclude}}
	}
	n, updated, took, err := a.reimport(urls, *sw.timeout, func(popups []map[string]any) int {
		n := 0
		for _, p := range popups {
			name, _ := p["name"].(string)
			t, _ := p["targeting"].(map[string]any)
			if !benchHalf(name) || t == nil {
				continue
			}
			t["audiences"] = refs
			n++
		}
		return n
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "target: audiences %s on %d popups (%d updated), served in %s\n", *sw.state, n, updated, took.Round(time.Millisecond))
	return nil
}

// errNoLoader: the API does not hold audience sets, so its audience popups answer fail-closed
// and a measurement of them measures nothing.
func errNoLoader(url string) error {
	return fmt.Errorf("%s has no popup_audience_unbound_popups: this popup-api does not load audience sets (the loader is not wired in)", url)
}

// metrics reads the unlabelled (or label-summed) samples of a Prometheus text page.
func (a adminClient) metrics(url string) (map[string]float64, error) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	res, err := a.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "{")
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err == nil {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// propagate times a replace of -n members and a delta of -delta members of an audience a live
// popup targets, written through instance 1, until instance 2 (and instance 1) serve them: a
// GET of the public API for a uid only the new version holds shows the probe popup.
func propagate(args []string) error {
	fs := flag.NewFlagSet("propagate", flag.ExitOnError)
	admin1 := fs.String("admin1", "", "admin base URL of instance 1 (the writes go there)")
	public1 := fs.String("public1", "", "public base URL of instance 1")
	admin2 := fs.String("admin2", "", "admin base URL of instance 2")
	public2 := fs.String("public2", "", "public base URL of instance 2")
	token := fs.String("token", "", "admin token")
	n := fs.Int("n", 10_000_000, "members of the replace")
	initial := fs.Int("initial", 10_000_000, "members of the version the replace replaces")
	delta := fs.Int("delta", 10_000, "members of the delta (members/add)")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for an instance to serve a write")
	fs.Parse(args) // ExitOnError
	a1, a2 := newAdmin(*admin1, *token), newAdmin(*admin2, *token)
	for _, u := range []string{*admin1 + "/metrics", *admin2 + "/metrics"} {
		m, err := a1.metrics(u)
		if err != nil {
			return err
		}
		if _, ok := m["popup_audience_unbound_popups"]; !ok {
			return errNoLoader(u)
		}
	}
	au, err := a1.ensureAudience("bench-propagate")
	if err != nil {
		return err
	}
	if au, err = a1.writeMembers(au.ID, "", func(w *bufio.Writer) { uidLines(w, "p1-", 0, *initial) }); err != nil {
		return err
	}
	// The probe popup: only GETs from region "aud" match it, so the steady-state load never does;
	// reshow 0, so every GET of a member shows it.
	var created struct{ ID int64 }
	p := map[string]any{"name": "bench-audience-probe", "priority": 2000, "title": "Audience probe",
		"content": "Shown to members of bench-propagate.", "link_url": "app://campaign/aud", "reshow_after_seconds": 0,
		"targeting": map[string]any{"regions": []string{"aud"}, "rollout_percent": 100,
			"audiences": map[string][]int64{"include": {au.ID}, "exclude": {}}}}
	if err := a1.json("POST", "/admin/v1/popups", p, http.StatusCreated, &created); err != nil {
		return err
	}
	probe := func(public, uid string) func() (bool, error) {
		url := public + "/api/v1/popup?uid=" + uid + "&platform=ios&app_version=8.0.0&region=aud&lang=en"
		c := client(1)
		want := []byte(`"id":` + strconv.FormatInt(created.ID, 10) + `,`)
		return func() (bool, error) {
			res, err := c.Get(url)
			if err != nil {
				return false, err
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return false, fmt.Errorf("GET %s: %s", url, res.Status)
			}
			return bytes.Contains(b, want), nil
		}
	}
	// served waits until check answers true and returns when (unix ns).
	served := func(check func() (bool, error)) (int64, error) {
		began := time.Now()
		for {
			ok, err := check()
			if err != nil {
				return 0, err
			}
			if ok {
				return time.Now().UnixNano(), nil
			}
			if time.Since(began) > *timeout {
				return 0, fmt.Errorf("not served after %s", *timeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, public := range []string{*public1, *public2} {
		if _, err := served(probe(public, "p1-0")); err != nil {
			return fmt.Errorf("the first version at %s: %w", public, err)
		}
	}
	writes := []struct {
		action, path, prefix string
		n                    int
	}{{"replace", "", "p2-", *n}, {"add", "/add", "p3-", *delta}}
	for _, w := range writes {
		m1, err := a1.metrics(*admin1 + "/metrics")
		if err != nil {
			return err
		}
		m2, err := a2.metrics(*admin2 + "/metrics")
		if err != nil {
			return err
		}
		// Both instances are polled from the 200 on: the time to serve is counted from it.
		var wg sync.WaitGroup
		var t1, t2 int64
		var e1, e2 error
		start := make(chan struct{})
		for _, x := range []struct {
			public string
			t      *int64
			e      *error
		}{{*public1, &t1, &e1}, {*public2, &t2, &e2}} {
			wg.Add(1)
			check := probe(x.public, w.prefix+"0")
			go func() {
				defer wg.Done()
				<-start
				*x.t, *x.e = served(check)
			}()
		}
		t0 := time.Now().UnixNano()
		prefix, size := w.prefix, w.n
		au, err = a1.writeMembers(au.ID, w.path, func(bw *bufio.Writer) { uidLines(bw, prefix, 0, size) })
		t200 := time.Now().UnixNano()
		close(start)
		wg.Wait()
		if err != nil {
			return err
		}
		if e1 != nil || e2 != nil {
			return fmt.Errorf("%s: instance 1: %v; instance 2: %v", w.action, e1, e2)
		}
		n1, err := a1.metrics(*admin1 + "/metrics")
		if err != nil {
			return err
		}
		n2, err := a2.metrics(*admin2 + "/metrics")
		if err != nil {
			return err
		}
		fmt.Printf("propagate action=%s n=%d version=%d size=%d t0=%d t200=%d t1=%d t2=%d "+
			"members1=%g bytes1=%g rss1_before=%g rss1=%g members2=%g bytes2=%g rss2_before=%g rss2=%g\n",
			w.action, w.n, au.Version, au.Size, t0, t200, t1, t2,
			n1["popup_audience_members"], n1["popup_audience_bytes"], m1["process_resident_memory_bytes"], n1["process_resident_memory_bytes"],
			n2["popup_audience_members"], n2["popup_audience_bytes"], m2["process_resident_memory_bytes"], n2["process_resident_memory_bytes"])
	}
	return nil
}

// replaceMembers replaces an audience's members with -n generated uids in one streamed upload.
func replaceMembers(args []string) error {
	fs := flag.NewFlagSet("replace", flag.ExitOnError)
	admin := fs.String("admin", "http://127.0.0.1:18081", "admin base URL")
	token := fs.String("token", "", "admin token")
	id := fs.Int64("id", 0, "audience id")
	n := fs.Int("n", 20_000_000, "members of the replace")
	prefix := fs.String("prefix", "aud-r-", "the uids' prefix")
	fs.Parse(args) // ExitOnError
	began := time.Now()
	au, err := newAdmin(*admin, *token).writeMembers(*id, "", func(w *bufio.Writer) { uidLines(w, *prefix, 0, *n) })
	if err != nil {
		return err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"audience": au.ID, "version": au.Version, "members": au.Size,
		"seconds": time.Since(began).Seconds(), "cpu_seconds": cpu.Seconds()})
}
