package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/testenv"
)

// The operator console (internal/console) driven in a real headless Chromium against a real
// popup-api on MariaDB and Redis. scripts/test.sh installs Chromium (Debian's package) and
// axe-core (npm, package-lock.json) first; without them these tests skip, naming what to
// install, except under `make test` (POPUP_TEST_STRICT=1), where they fail.
// POPUP_SCREENSHOTS=1 also writes the screenshots of docs/screenshots/.

// q is the query of GET /api/v1/popup the tests serve their users with.
const q = apitest.UserQuery

// browser is one headless Chromium tab on the console of in.
type browser struct {
	t      *testing.T
	ctx    context.Context
	origin string
	axe    string
	bc     cdp.BrowserContextID // its browser context in the package's Chromium (sharedChromium)

	mu       sync.Mutex
	problems []string // console errors, exceptions, CSP refusals
	requests []string // every URL the page asked for
}

func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("POPUP_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "Chromium is not installed: `apt-get install -y chromium` (scripts/test.sh installs it), or set POPUP_CHROMIUM")
	return ""
}

// readAxe reads axe-core once for the package's browser tests.
var readAxe = sync.OnceValues(func() ([]byte, error) { return os.ReadFile("../../../node_modules/axe-core/axe.min.js") })

func axeSource(t *testing.T) string {
	t.Helper()
	raw, err := readAxe()
	if err != nil {
		testenv.Missing(t, "axe-core is not installed: run `npm ci` at the repository root (scripts/test.sh does)")
	}
	return string(raw)
}

// chromium is the one headless Chromium of this package's browser tests, started by the first
// of them and stopped by TestMain. Each test gets a browser context of its own in it (its own
// cookies, storage and cache, as a fresh profile would give), which costs a window, not a
// browser: a Chromium start is about a CPU-second, and there are over twenty of these tests.
var chromium struct {
	once    sync.Once
	ctx     context.Context // the browser's first context: cancelling it stops Chromium
	stop    func()
	profile string
	err     error
}

// sharedChromium returns the context of the package's Chromium, starting it if need be.
func sharedChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	chromium.once.Do(func() {
		// an empty profile, removed once Chromium has exited (stopChromium)
		chromium.profile, chromium.err = os.MkdirTemp("", "popup-console-chromium-")
		if chromium.err != nil {
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-extensions", true),
			// every window (a test's tab has one) would otherwise preload the address bar's two
			// suggestion popups, pages of the browser's own UI: about 0.7 CPU-seconds a window
			chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,WebUIOmniboxPopup,WebUIOmniboxAimPopup"),
			// a tab in the background (a test's second tab) keeps its timers: waitFor's checks
			// run in the page
			chromedp.Flag("disable-background-timer-throttling", true),
			chromedp.Flag("disable-renderer-backgrounding", true),
			chromedp.Flag("disable-backgrounding-occluded-windows", true),
			chromedp.UserDataDir(chromium.profile),
			chromedp.WindowSize(1440, 1000),
			// the operator's local time is not UTC: datetime-local inputs must be converted
			chromedp.Env("TZ=Asia/Shanghai"),
		}
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		// chromedp logs the CDP events it has no handler for (newer Chromium sends more); the
		// rest goes to the test binary's output, which go test shows when the package fails
		ctx, cancelC := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...any) {
			if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled node event") {
				fmt.Fprintln(os.Stderr, "chromedp: "+msg)
			}
		}))
		chromium.ctx = ctx
		chromium.stop = func() {
			cancelC()
			cancelA() // waits for Chromium to exit
		}
		chromium.err = chromedp.Run(ctx) // starts Chromium
	})
	require.NoError(t, chromium.err, "starting Chromium")
	return chromium.ctx
}

// stopChromium stops the package's Chromium, if a test started it, and removes its profile.
func stopChromium() {
	if chromium.stop != nil {
		chromium.stop()
	}
	if chromium.profile != "" {
		if err := os.RemoveAll(chromium.profile); err != nil {
			time.Sleep(500 * time.Millisecond)
			_ = os.RemoveAll(chromium.profile) // best effort: a leftover temp profile harms nothing
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopChromium()
	os.Exit(code)
}

func newBrowser(t *testing.T, in *apitest.Instance) *browser {
	t.Helper()
	axe := axeSource(t)
	ex := browserLevel(sharedChromium(t))
	bc, err := target.CreateBrowserContext().Do(ex)
	require.NoError(t, err, "a browser context")
	t.Cleanup(func() { // after its tabs have closed (cleanups run last first)
		if err := target.DisposeBrowserContext(bc).Do(ex); err != nil {
			t.Logf("disposing of the browser context: %v", err)
		}
	})
	b := &browser{t: t, ctx: openTab(t, bc), origin: "http://" + in.Admin, axe: axe, bc: bc}
	b.listen()
	return b
}

// openTab opens a tab in the browser context bc, in a window of its own: Chromium opens a tab in
// a browser context other than the default one only with a window (chromedp's
// WithNewBrowserContext asks for none, and fails). The tab closes when the test ends.
func openTab(t *testing.T, bc cdp.BrowserContextID) context.Context {
	t.Helper()
	root := sharedChromium(t)
	id, err := target.CreateTarget("about:blank").WithBrowserContextID(bc).WithNewWindow(true).Do(browserLevel(root))
	require.NoError(t, err, "a tab")
	ctx, closeTab := chromedp.NewContext(root, chromedp.WithTargetID(id))
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancel()
		closeTab() // waits for the tab to close
	})
	return ctx
}

// browserLevel is root's context for the commands of the browser itself (Target.*), not of a page.
func browserLevel(root context.Context) context.Context {
	return cdp.WithExecutor(root, chromedp.FromContext(root).Browser)
}

// newTab opens another tab in b's browser context: a page of its own (its own sessionStorage, so
// it signs in by itself), as a second operator's window would be.
func (b *browser) newTab() *browser {
	b.t.Helper()
	tab := &browser{t: b.t, ctx: openTab(b.t, b.bc), origin: b.origin, axe: b.axe, bc: b.bc}
	tab.listen()
	return tab
}

// listen records the page's errors and requests (checked when the test ends).
func (b *browser) listen() {
	t := b.t
	t.Helper()
	chromedp.ListenTarget(b.ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.problems = append(b.problems, "console "+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		}
	})
	require.NoError(t, chromedp.Run(b.ctx, network.Enable()))
	t.Cleanup(b.checkClean)
}

// checkClean: no script error, no request to another origin, the token in no URL.
func (b *browser) checkClean() {
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Empty(b.t, b.problems, "the page logged errors")
	for _, u := range b.requests {
		if strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:") {
			continue
		}
		assert.True(b.t, strings.HasPrefix(u, b.origin+"/"), "request to another origin: %s", u)
		assert.NotContains(b.t, u, apitest.Token, "the token is in a URL")
	}
}

func (b *browser) run(actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Run(ctx, actions...))
}

// visible is a page condition: an element matches sel and has a box, as chromedp's visibility
// check has it.
func visible(sel string) string {
	return `(() => { const el = document.querySelector(` + js(sel) + `); return !!el && !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length); })()`
}

// text waits for sel and returns its text (innerText, as chromedp.Text reads it). Both in the
// page: chromedp's own queries (WaitVisible, Text) look nodes up in its copy of the DOM, which is
// filled from the browser's DOM events; a query made as a navigation ends can find its node ids
// before that copy has them and then wait for them in vain until the step's deadline
// (chromedp/chromedp#1593): a sign-in form on the screen for seconds, never seen.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.waitFor(visible(sel))
	var s string
	b.eval(`document.querySelector(`+js(sel)+`).innerText`, &s)
	return s
}

// eval evaluates a JavaScript expression (awaiting a promise) into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	b.run(chromedp.Evaluate(expr, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
}

// fill sets an input's value as a paste would, firing input and change, once sel is visible
// (waited for in the page, as text does).
func (b *browser) fill(sel, value string) {
	b.t.Helper()
	b.waitFor(visible(sel))
	v, _ := json.Marshal(value)
	b.run(chromedp.Evaluate(fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); })()`, js(sel), v), nil))
}

// waitFor waits until a JavaScript condition is true. The page checks it every 10 ms and answers
// once, when it holds (or after 10 s): one round trip to Chromium, not one every 50 ms. A
// navigation meanwhile ends the page's check; it starts again in the new page.
func (b *browser) waitFor(cond string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		ms := time.Until(deadline).Milliseconds()
		var ok bool
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
		lastErr = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`new Promise((resolve, reject) => {
			const end = performance.now() + %d;
			const check = () => {
				let v;
				try { v = !!(%s); } catch (e) { reject(e); return; }
				if (v || performance.now() > end) resolve(v); else setTimeout(check, 10);
			};
			check();
		})`, ms, cond), &ok, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
		cancel()
		if lastErr == nil && ok {
			return
		}
		if lastErr == nil {
			break // the page's own deadline passed
		}
		time.Sleep(50 * time.Millisecond) // a page being replaced: check again in the next one
	}
	var body string
	b.eval(`'[toast: ' + document.getElementById('toast').textContent + '] [dialog open: ' + document.getElementById('confirm').open +
		'] [focus: ' + (document.activeElement && document.activeElement.outerHTML.slice(0, 120)) + ']\n' + document.querySelector('main').innerText.slice(0, 1500)`, &body)
	var history string
	b.eval(`(document.querySelector('#history') || {innerText: ''}).innerText.slice(0, 300)`, &history)
	b.mu.Lock()
	last := b.requests[max(0, len(b.requests)-6):]
	b.mu.Unlock()
	b.t.Fatalf("timed out waiting for %s (last error: %v); the last requests: %v; the page shows:\n%s\n[history: %s]", cond, lastErr, last, body, history)
}

type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axe runs axe-core on the page as it is and fails on any serious or critical violation. The
// time axe took and the page's size go to the test's log (shown with -v, or when it fails).
//
// Every rule runs on the whole page but the rows of a table body after its fifth: the console
// renders a table's rows from one template, and axe's time grows with them (color-contrast,
// two thirds of it, measures each cell's text). The 60-popup list took 1.9 s of axe with its 50
// rows and 0.5 s with 5, at the lowest CPU priority beside a busy MariaDB; under the suite's load
// the 50 rows once outran the 20 s that a browser step may take. A row unlike the first five is
// checked where a filter or a sort brings it into them (the list test's ended and scheduled
// popups are its first two rows).
func (b *browser) axeCheck(screen string) {
	b.t.Helper()
	assert.Empty(b.t, b.axeViolations(screen), "axe: serious or critical violations on the %s screen", screen)
}

// axeViolations runs axe as axeCheck does and returns its serious and critical violations.
func (b *browser) axeViolations(screen string) []axeViolation {
	b.t.Helper()
	var loaded bool
	b.eval(`typeof window.axe === 'object'`, &loaded)
	if !loaded {
		b.run(chromedp.Evaluate(b.axe, nil))
	}
	var out struct {
		Ms       float64        `json:"ms"`
		Elements int            `json:"elements"`
		Vs       []axeViolation `json:"vs"`
	}
	b.eval(`(async () => { const s = performance.now(); const r = await axe.run({exclude: [['tbody tr:nth-child(n+6)']]}, {resultTypes: ['violations']});
		return {ms: performance.now() - s, elements: document.getElementsByTagName('*').length,
			vs: r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
				.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}))}; })()`, &out)
	b.t.Logf("axe on the %s screen: %.0f ms, %d elements", screen, out.Ms, out.Elements)
	return out.Vs
}

// axeCheck's scope: a violation on the page, or in a table body's first five rows, is found; one
// only in a later row is not.
func TestConsoleAxeScope(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, &apitest.Instance{Admin: "127.0.0.1:1"}) // no server: the pages are data: URLs
	page := func(imageRow int, imageOutside bool) string {
		var h strings.Builder
		h.WriteString(`<!doctype html><html lang="en"><title>scope</title><main><table><thead><tr><th>n</th></tr></thead><tbody>`)
		for i := 1; i <= 8; i++ {
			cell := apitest.Itoa(int64(i))
			if i == imageRow {
				cell = `<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">`
			}
			h.WriteString("<tr><td>" + cell + "</td></tr>")
		}
		h.WriteString(`</tbody></table>`)
		if imageOutside {
			h.WriteString(`<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">`)
		}
		h.WriteString(`</main></html>`)
		return "data:text/html;charset=utf-8," + url.PathEscape(h.String())
	}
	for _, tt := range []struct {
		name          string
		row           int
		outside, want bool
	}{
		{"an image without alt text in row 2", 2, false, true},
		{"in row 5", 5, false, true},
		{"in row 6", 6, false, false},
		{"outside the table", 0, true, true},
	} {
		b.run(chromedp.Navigate(page(tt.row, tt.outside)))
		found := false
		for _, v := range b.axeViolations(tt.name) {
			found = found || v.ID == "image-alt"
		}
		assert.Equal(t, tt.want, found, tt.name)
	}
}

// shot writes docs/screenshots/<name>.png, the viewport scrolled to the element at (if not ""),
// when POPUP_SCREENSHOTS=1.
func (b *browser) shot(name, at string) {
	b.t.Helper()
	if os.Getenv("POPUP_SCREENSHOTS") != "1" {
		return
	}
	sel, _ := json.Marshal(at)
	b.run(chromedp.Evaluate(fmt.Sprintf(`(() => { document.getElementById('toast').textContent = '';
		const el = %s && document.querySelector(%s); if (el) el.scrollIntoView({block: 'start'}); else window.scrollTo(0, 0); })()`, sel, sel), nil))
	var png []byte
	b.run(chromedp.CaptureScreenshot(&png))
	dir := "../../../docs/screenshots"
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// newForm opens the form of a new popup.
func (b *browser) newForm() {
	b.t.Helper()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/new"))
	b.waitFor(`document.querySelector('#popup-form[data-id="new"]')`)
}

func (b *browser) signIn() {
	b.t.Helper()
	b.run(chromedp.Navigate(b.origin + "/admin/ui/"))
	b.fill("#token", apitest.Token)
	b.run(chromedp.Click("#signin", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-results[aria-busy=false]')`)
}

// createThroughForm fills the new-popup form, first with a bad rollout percent (the API's field
// error must show at the field), then fixes it and saves; it returns the new popup's id.
func (b *browser) createThroughForm(name, title string) int64 {
	t := b.t
	t.Helper()
	b.newForm()
	b.fill("#f-name", name)
	b.fill("#f-status", "active")
	b.fill("#f-priority", "50")
	b.fill("#f-uids", "qa-device-1")
	// typed key by key: the preview follows every keystroke
	b.run(chromedp.SendKeys("#f-title", title))
	assert.Equal(t, title, b.text("#preview .pv-title"))
	b.fill("#f-content", "Up to 40% off this week.")
	b.run(chromedp.Click(`//button[text()="Add button"]`, chromedp.BySearch))
	b.fill("#buttons-list [name=button-text]", "Shop now")
	b.fill("#buttons-list [name=button-link]", "https://shop.example/sale")
	b.fill("#f-ext", `{"campaign": "winter"}`)
	assert.Equal(t, "Shop now", b.text("#preview .pv-btn"))
	assert.Contains(t, b.text("#preview .pv-content"), "40% off")
	var phone, web string
	b.eval(`getComputedStyle(document.querySelector('#preview .screen')).width`, &phone)
	b.run(chromedp.Click(`input[name=device][value=web]`))
	b.eval(`getComputedStyle(document.querySelector('#preview .screen')).width`, &web)
	assert.NotEqual(t, phone, web, "the web frame is not the phone frame")
	b.run(chromedp.Click(`input[name=device][value=phone]`))

	// a bad value: the API's 400 names the field, shown at the field (an active popup is
	// published: after the review)
	b.fill("#f-rollout", "150")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#f-rollout[aria-invalid=true]')`)
	var described string
	b.eval(`document.querySelector('#f-rollout').getAttribute('aria-describedby')`, &described)
	assert.Contains(t, described, "f-rollout-err")
	assert.NotEmpty(t, b.text("#f-rollout-err"))
	assert.Contains(t, b.text("#form-errors"), "targeting › rollout (percent of users)")
	var focused string
	b.eval(`document.activeElement.id`, &focused)
	assert.Equal(t, "f-rollout", focused, "focus goes to the first invalid field")
	b.shot("edit-field-error", "#platforms")

	b.fill("#f-rollout", "100")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#popup-form[data-revision="1"]')`)
	var hash string
	b.eval(`location.hash`, &hash)
	var id int64
	_, err := fmt.Sscanf(hash, "#/popups/%d", &id)
	require.NoError(t, err)
	assert.Equal(t, apitest.Itoa(id), b.attr("#popup-form", "data-id"))
	return id
}

func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	b := newBrowser(t, in)

	// the static files load without the token, with the security headers
	res, err := in.Client.Get("http://" + in.Admin + "/admin/ui/")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'")

	// sign-in: a wrong token is refused with the API's 401
	b.run(chromedp.Navigate(b.origin + "/admin/ui/"))
	b.axeCheck("sign-in")
	b.fill("#token", "not-the-token")
	b.run(chromedp.Click("#signin", chromedp.ByQuery))
	assert.Contains(t, b.text("#token-error"), "Wrong token")
	var stored string
	b.eval(`sessionStorage.getItem('popup-admin-token') || ''`, &stored)
	assert.Empty(t, stored)
	b.fill("#token", apitest.Token)
	b.run(chromedp.Click("#signin", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-results[aria-busy=false]')`)
	b.eval(`sessionStorage.getItem('popup-admin-token')`, &stored)
	assert.Equal(t, apitest.Token, stored)
	b.axeCheck("popup list")

	id := b.createThroughForm("winter sale", "Winter sale")
	b.axeCheck("edit")
	p := in.PublicPopup(t, "u-1", func(p map[string]any) bool { return p != nil && p["title"] == "Winter sale" })
	assert.Equal(t, float64(id), p["id"])
	assert.Equal(t, "Shop now", p["buttons"].([]any)[0].(map[string]any)["text"])
	assert.Equal(t, map[string]any{"campaign": "winter"}, p["ext"])

	// edit: the title and the schedule change (local time in, UTC stored), the public API serves it
	b.fill("#f-title", "Winter sale: last days")
	b.fill("#f-start", "2026-11-01T08:00")
	b.fill("#f-end", "2027-01-01T07:59")
	assert.Contains(t, b.text("#window-utc"), "start 2026-11-01T00:00:00Z, end 2026-12-31T23:59:00Z")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.answerDialog("Publish", true)
	b.waitFor(`document.querySelector('#toast').textContent.includes('Saved revision 2') && document.querySelector('#popup-form[data-revision="2"]')`)
	in.PublicPopup(t, "u-2", func(p map[string]any) bool { return p != nil && p["title"] == "Winter sale: last days" })
	saved := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	assert.Equal(t, "2026-11-01T00:00:00Z", saved.Body["start_at"])
	assert.Equal(t, "2026-12-31T23:59:00Z", saved.Body["end_at"])
	var shown string
	b.eval(`document.querySelector('#f-start').value`, &shown)
	assert.Equal(t, "2026-11-01T08:00", shown, "the stored UTC time is shown in local time again")
	b.shot("edit", "")

	// today's numbers: two impressions (u-1, u-2) and a click, once the worker has counted them
	require.Equal(t, http.StatusAccepted, in.Action(t, id, map[string]any{"uid": "u-1", "action": "click"}).Status)
	deadline := time.Now().Add(15 * time.Second)
	for {
		res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id)+"/stats", nil)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		if totals, _ := res.Body["totals"].(map[string]any); totals["impressions"] == 2.0 && totals["clicks"] == 1.0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the worker never counted the events: %s", res.Raw)
		time.Sleep(200 * time.Millisecond)
	}

	// the list shows it, among others (their rows show status, window and targeting)
	for _, p := range []map[string]any{
		{"name": "app update nudge", "priority": 80, "title": "Update the app", "targeting": map[string]any{"platforms": []string{"android"},
			"min_app_version": "8.0.0", "regions": []string{"cn"}, "rollout_percent": 25}},
		{"name": "spring teaser", "status": "draft", "priority": 10, "title": "Spring is coming",
			"start_at": "2027-03-01T00:00:00Z", "end_at": "2027-03-31T00:00:00Z"},
		{"name": "holiday banner", "status": "paused", "priority": 5, "title": "Happy holidays", "targeting": map[string]any{"langs": []string{"en", "de"}}},
	} {
		in.CreatePopup(t, p)
	}
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups"))
	b.waitFor(`document.querySelector('#popup-results[aria-busy=false] #popup-table')`)
	assert.Contains(t, b.text(`#popup-table tr[data-id="`+apitest.Itoa(id)+`"]`), "winter sale")
	var today []string
	b.eval(`[...document.querySelectorAll('#popup-table tr[data-id="`+apitest.Itoa(id)+`"] td.num')].map(td => td.textContent)`, &today)
	assert.Equal(t, []string{"50", "2", "50.0%"}, today, "priority, today's impressions and CTR")
	var spark string
	b.eval(`document.querySelector('#popup-table tr[data-id="`+apitest.Itoa(id)+`"] svg.spark').getAttribute('aria-label')`, &spark)
	assert.Contains(t, spark, "0, 0, 2", "the 14-day sparkline ends with today's 2")
	assert.Contains(t, b.text(`#popup-table`), "android · v8.0.0–* · regions cn · 25% rollout")
	b.fill("#filter-state", "paused")
	b.waitFor(`document.querySelectorAll('#popup-table tbody tr').length === 1`)
	assert.Contains(t, b.text(`#popup-table tbody`), "holiday banner")
	b.fill("#filter-state", "")
	b.waitFor(`document.querySelectorAll('#popup-table tbody tr').length === 4`)
	b.shot("list", "")

	// explain for a user: u-1 saw it a moment ago (reshow interval; the click cooldown is the
	// API's default, 0), a new user gets it
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/explain"))
	b.fill("#x-uid", "u-1")
	b.fill("#x-version", "9.0.0")
	b.run(chromedp.Click("#explain", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#explain-out .candidates')`)
	assert.Contains(t, b.text("#explain-out .verdict"), "no popup", "u-1 saw it a moment ago")
	b.run(chromedp.Click(`#explain-out details[data-reason="reshow"] summary`, chromedp.ByQuery))
	assert.Equal(t, "reshow", b.attr(`#explain-out tr[data-id="`+apitest.Itoa(id)+`"] td[data-reason]`, "data-reason"))
	assert.Contains(t, b.text("#explain-out"), "Popups shown to this user today: 1")
	b.fill("#x-uid", "u-new")
	b.run(chromedp.Click("#explain", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#explain-out .verdict') && document.querySelector('#explain-out .verdict').textContent.includes('#` + apitest.Itoa(id) + `')`)
	b.axeCheck("explain")
	b.shot("explain", "")

	// pause with If-Match; a stale ETag is a 412 shown as "changed by someone else"
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups/" + apitest.Itoa(id)))
	b.waitFor(`document.querySelector('#popup-form[data-revision="2"] #pause')`)
	b.waitFor(`document.querySelector('#results-summary') && document.querySelector('#results-summary').textContent.includes('Impressions 2, unique users 2, clicks 1 (CTR 50.0%), closes 0 (close rate 0.0%); users reached ever 2')`)
	in.AdminDo(t, http.MethodPut, "/admin/v1/popups/"+apitest.Itoa(id), map[string]any{"name": "winter sale", "status": "active", "title": "changed elsewhere",
		"buttons": []map[string]any{{"text": "Shop now", "link_url": "https://shop.example/sale"}}, "targeting": map[string]any{"uids": []string{"qa-device-1"}}, "priority": 50})

	b.run(chromedp.Click("#pause", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#form-errors .alert')`)
	assert.Contains(t, b.text("#form-errors"), "changed by someone else")
	b.run(chromedp.Click(`//button[text()="Reload the popup"]`, chromedp.BySearch))
	b.waitFor(`document.querySelector('#popup-form[data-revision="3"]') && document.querySelector('#f-title').value === 'changed elsewhere'`)
	b.run(chromedp.Click("#pause", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#toast').textContent.includes('Paused')`)
	in.PublicPopup(t, "u-3", func(p map[string]any) bool { return p == nil })

	// duplicate: a new draft, not saved until Create
	b.waitFor(`document.querySelector('#popup-form[data-revision="4"] #duplicate')`)
	b.run(chromedp.Click("#duplicate", chromedp.ByQuery))
	b.waitFor(`location.hash === '#/popups/new' && document.querySelector('#f-name') && document.querySelector('#f-name').value === 'winter sale (copy)'`)
	var status string
	b.eval(`document.querySelector('#f-status').value`, &status)
	assert.Equal(t, "draft", status)

	// import/export screen renders (the endpoints may be absent: "not available"); the duplicate
	// is not saved, so leaving it asks first
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/import"))
	b.answerDialog("unsaved", true)
	b.waitFor(`document.querySelector('#import-dry')`)
	b.axeCheck("import/export")

	// keyboard: every control is reachable with Tab and shows a focus ring
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups"))
	b.waitFor(`document.querySelector('#popup-results[aria-busy=false]')`)
	var focused string
	b.eval(`document.activeElement.id`, &focused)
	assert.Equal(t, "page-title", focused, "a new screen moves focus to its heading")
	var first string
	b.eval(`document.querySelector('a[href], button, input, select, textarea').textContent`, &first)
	assert.Equal(t, "Skip to content", first)
	b.run(chromedp.KeyEvent(kb.Tab))
	assert.Equal(t, "New popup", b.focusedText())
	var outline string
	b.eval(`getComputedStyle(document.activeElement).outlineStyle`, &outline)
	assert.NotEqual(t, "none", outline, "a focused link shows a focus ring")
	b.run(chromedp.KeyEvent(kb.Tab))
	b.eval(`document.activeElement.id`, &focused)
	assert.Equal(t, "filter-state", focused)
	b.run(chromedp.KeyEvent(kb.Tab + kb.Tab + kb.Tab + kb.Tab))
	assert.Equal(t, "Name ↕", b.focusedText(), "past the experiment filter, the search and its button to the sortable headers")
	b.run(chromedp.KeyEvent(kb.Tab + kb.Tab + kb.Tab))
	assert.Equal(t, "winter sale", b.focusedText(), "past the headers to the first row's link: the popup changed last (paused above)")
	var firstID string
	b.eval(`document.querySelector('#popup-table tbody tr').dataset.id`, &firstID)
	b.run(chromedp.KeyEvent(kb.Enter))
	b.waitFor(`location.hash === '#/popups/` + firstID + `' && document.activeElement.id === 'page-title'`)
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups"))
	b.waitFor(`document.querySelector('#popup-results[aria-busy=false]')`)
	b.run(chromedp.KeyEvent(kb.Tab))
	b.run(chromedp.KeyEvent(kb.Enter))
	b.waitFor(`location.hash === '#/popups/new' && document.activeElement.id === 'page-title'`)
	b.run(chromedp.Navigate(b.origin + "/admin/ui/#/popups"))
	b.waitFor(`document.querySelector('#popup-results[aria-busy=false]')`)
	var unreachable []string
	b.eval(`[...document.querySelectorAll('a[href], button:not([disabled]), input, select, textarea')]
		.filter(el => el.offsetParent !== null && el.tabIndex < 0).map(el => el.outerHTML.slice(0, 80))`, &unreachable)
	assert.Empty(t, unreachable)

	// sign-out clears the token
	b.run(chromedp.Click("#signout", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#token')`)
	b.eval(`sessionStorage.getItem('popup-admin-token') || ''`, &stored)
	assert.Empty(t, stored)
}

func (b *browser) focusedText() string {
	b.t.Helper()
	var s string
	b.eval(`document.activeElement ? document.activeElement.textContent.trim() : ''`, &s)
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// attr waits for sel to be visible and returns its attribute name ("" when it has none), both in
// the page, as text does.
func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	b.waitFor(visible(sel))
	var v string
	b.eval(`document.querySelector(`+js(sel)+`).getAttribute(`+js(name)+`) ?? ''`, &v)
	return v
}
