//go:build clients

package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SDK in headless Chromium against a real popup-api + popup-worker that scripts/clients.sh
// starts with CORS allowing the page's origin (POPUP_CLIENTS_PAGE_ADDR): the page is served
// from that loopback port, the API from another, a real cross-origin; a second page on a port
// CORS does not allow shows that such an origin gets nothing.

func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	require.NotEmpty(t, v, "%s is not set: scripts/clients.sh runs this test against the popup-api it starts", name)
	return v
}

// page serves popup-client.js and a test page that uses it, on addr.
func page(t *testing.T, addr, api string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/popup-client.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		http.ServeFile(w, r, "popup-client.js")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><main><h1>Shop</h1><p>Today's offers.</p><button id="before" type="button">Offers</button></main>
<script type="module">
import { createPopupClient } from '/popup-client.js';
window.showFor = async (uid, region) => {
  const c = createPopupClient({ baseUrl: %[1]q, uid, appVersion: '8.10.0', lang: 'en', region, retryDelayMs: 50,
    openLink: (u) => { window.opened = u; } });
  document.getElementById('before').focus();
  const s = await c.show(document.body);
  window.done = s ? s.done : null;
  return s ? { shown: true, decisionId: s.decisionId, popupId: s.popup.id } : { shown: false };
};
// the SDK's other uses (sdk_pages_browser_test.go): o holds the client's options beyond these
window.client = (o) => createPopupClient({ baseUrl: %[1]q, appVersion: '8.10.0', lang: 'en', retryDelayMs: 50,
  openLink: (u) => { window.opened = u; }, onError: (e) => { (window.errors = window.errors || []).push(e.op + ' ' + e.code); }, ...o });
window.showWith = async (o) => {
  const s = await window.client(o).show(document.body);
  window.done = s ? s.done : null;
  return s ? { shown: true, decisionId: s.decisionId, popupId: s.popup.id, confirmed: await s.confirmed } : { shown: false };
};
window.showWhere = async (o, where) => {
  const s = await window.client(o).show(document.body, where);
  window.done = s ? s.done : null;
  return s ? { shown: true, decisionId: s.decisionId, popupId: s.popup.id, confirmed: await s.confirmed } : { shown: false };
};
window.showTwice = async (o) => {
  const c = window.client(o);
  const [a, b] = await Promise.all([c.show(document.body), c.show(document.body)]);
  window.done = a ? a.done : null;
  return { same: a === b, dialogs: document.querySelectorAll('[role=dialog]').length, decisionId: a ? a.decisionId : '',
    confirmed: a ? await a.confirmed : false };
};
window.ready = true;
</script></body></html>`, api)
	})
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// admin calls the admin API and decodes its answer into out.
func admin(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, env(t, "POPUP_CLIENTS_ADMIN")+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+env(t, "POPUP_CLIENTS_TOKEN"))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Less(t, res.StatusCode, 300, "%s %s", method, path)
	require.NoError(t, json.NewDecoder(res.Body).Decode(out))
}

// createPopup creates an active web popup for the users of region.
func createPopup(t *testing.T, name, region string) int64 {
	t.Helper()
	var p struct {
		ID int64 `json:"id"`
	}
	admin(t, http.MethodPost, "/admin/v1/popups", map[string]any{
		"name": name, "status": "active", "title": "Winter sale",
		"content":   `<img src=x onerror="window.__xss=1">`,
		"link_url":  "https://shop.example/sale",
		"buttons":   []map[string]any{{"text": "Shop now", "link_url": "https://shop.example/now"}, {"text": "Later"}},
		"targeting": map[string]any{"platforms": []string{"web"}, "regions": []string{region}},
	}, &p)
	return p.ID
}

type totals struct {
	Impressions    int64 `json:"impressions"`
	Clicks         int64 `json:"clicks"`
	Closes         int64 `json:"closes"`
	ClicksByButton []struct {
		Button *int  `json:"button"`
		Clicks int64 `json:"clicks"`
	} `json:"clicks_by_button"`
}

type shown struct {
	Shown      bool   `json:"shown"`
	DecisionID string `json:"decisionId"`
	PopupID    int64  `json:"popupId"`
}

type actionResult struct {
	Action   string `json:"action"`
	Button   *int   `json:"button"`
	EventID  string `json:"eventId"`
	Accepted bool   `json:"accepted"`
}

func TestSDKInChromium(t *testing.T) {
	api := env(t, "POPUP_CLIENTS_API")
	allowedAddr := env(t, "POPUP_CLIENTS_PAGE_ADDR")
	page(t, allowedAddr, api)
	otherLn, err := net.Listen("tcp", "127.0.0.1:0") // a port CORS does not allow
	require.NoError(t, err)
	otherAddr := otherLn.Addr().String()
	require.NoError(t, otherLn.Close())
	page(t, otherAddr, api)
	axe, err := os.ReadFile("../../node_modules/axe-core/axe.min.js")
	require.NoError(t, err, "axe-core: run `npm ci` at the repository root (scripts/test.sh does)")

	// each popup is for a region of its own, so that only this test's users see it
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	region, blockedRegion := "sdk"+suffix, "blk"+suffix
	uids := []string{"web-click-" + suffix, "web-esc-" + suffix, "web-retry-" + suffix}
	id := createPopup(t, "sdk "+suffix, region)
	blocked := createPopup(t, "sdk blocked "+suffix, blockedRegion)

	ctx := chromium(t)
	var dropped atomic.Int32
	dropFirstAction(ctx, &dropped)

	run := func(actions ...chromedp.Action) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Run(tctx, actions...))
	}
	open := func(addr string) {
		t.Helper()
		run(chromedp.Navigate("http://"+addr+"/"), chromedp.Poll(`window.ready === true`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	}
	show := func(uid, region string) shown {
		t.Helper()
		var s shown
		run(chromedp.Evaluate(fmt.Sprintf(`window.showFor(%q, %q)`, uid, region), &s, awaitPromise))
		return s
	}
	done := func() actionResult {
		t.Helper()
		var r actionResult
		run(chromedp.Evaluate(`window.done`, &r, awaitPromise))
		return r
	}

	open(allowedAddr)

	// 1. a click on the second button, with its index and the decision id; the modal passes axe and
	// shows the HTML of the content as text
	s := show(uids[0], region)
	require.True(t, s.Shown, "the popup is shown on the allowed origin")
	assert.Equal(t, id, s.PopupID)
	var dialog struct {
		Role, Modal, Label, Content, Focused string
		Images                               int
		XSS                                  bool
	}
	run(chromedp.Evaluate(`(() => { const d = document.querySelector('[role=dialog]');
		return { role: d.getAttribute('role'), modal: d.getAttribute('aria-modal'),
			label: document.getElementById(d.getAttribute('aria-labelledby')).textContent,
			content: d.querySelector('.popup-content').textContent, images: d.querySelectorAll('img').length,
			focused: document.activeElement.getAttribute('aria-label') || document.activeElement.textContent,
			xss: window.__xss === 1 }; })()`, &dialog))
	assert.Equal(t, "dialog", dialog.Role)
	assert.Equal(t, "true", dialog.Modal)
	assert.Equal(t, "Winter sale", dialog.Label)
	assert.Equal(t, `<img src=x onerror="window.__xss=1">`, dialog.Content, "content is text, never HTML")
	assert.Zero(t, dialog.Images)
	assert.False(t, dialog.XSS)
	assert.Equal(t, "Close", dialog.Focused, "the dialog takes the focus")
	run(chromedp.Evaluate(string(axe), nil))
	var violations []map[string]any
	run(chromedp.Evaluate(`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))})))`, &violations, awaitPromise))
	assert.Empty(t, violations, "axe on the page with the modal")
	// the focus stays in the dialog: Close, the content's link, the two buttons, and Tab from the
	// last comes back to Close
	var focused string
	run(chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab),
		chromedp.Evaluate(`document.activeElement.getAttribute('aria-label') || document.activeElement.textContent`, &focused))
	assert.Equal(t, "Close", focused, "Tab cycles inside the dialog")
	run(chromedp.Click(`.popup-button:nth-of-type(2)`, chromedp.ByQuery))
	r := done()
	assert.Equal(t, actionResult{Action: "click", Button: ptr(1), EventID: r.EventID, Accepted: true}, r)
	var openedNone bool
	run(chromedp.Evaluate(`window.opened === undefined`, &openedNone))
	assert.True(t, openedNone, "a button without a link opens nothing")
	var gone bool
	run(chromedp.Evaluate(`document.querySelector('[role=dialog]') === null && document.activeElement.id === 'before'`, &gone))
	assert.True(t, gone, "the dialog is removed and the focus returns")

	// 2. Esc records a close
	require.True(t, show(uids[1], region).Shown)
	run(chromedp.KeyEvent(kb.Escape))
	r = done()
	assert.Equal(t, "close", r.Action)
	assert.True(t, r.Accepted)

	// 3. a click whose first send the test drops is retried with the same event id and counted once
	require.True(t, show(uids[2], region).Shown)
	dropped.Store(1)
	run(chromedp.Click(`.popup-button:nth-of-type(1)`, chromedp.ByQuery))
	r = done()
	assert.Equal(t, int32(2), dropped.Load(), "the first send was dropped")
	assert.True(t, r.Accepted, "the retry was accepted")
	assert.Equal(t, ptr(0), r.Button)
	var opened string
	run(chromedp.Evaluate(`window.opened`, &opened))
	assert.Equal(t, "https://shop.example/now", opened, "the button's link opens")

	// 4. a page on an origin CORS does not allow gets nothing
	open(otherAddr)
	assert.False(t, show("web-blocked-"+suffix, blockedRegion).Shown, "a disallowed origin shows nothing")

	// the popup's results: one impression per show, the clicks by button, the close; each once
	want := totals{Impressions: 3, Clicks: 2, Closes: 1}
	var got totals
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st struct {
			Totals totals `json:"totals"`
		}
		admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/popups/%d/stats", id), nil, &st)
		got = st.Totals
		if (got.Impressions == want.Impressions && got.Clicks == want.Clicks && got.Closes == want.Closes) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, want.Impressions, got.Impressions)
	assert.Equal(t, want.Clicks, got.Clicks)
	assert.Equal(t, want.Closes, got.Closes)
	byButton := map[int]int64{}
	for _, b := range got.ClicksByButton {
		if b.Button != nil {
			byButton[*b.Button] = b.Clicks
		}
	}
	assert.Equal(t, map[int]int64{0: 1, 1: 1}, byButton)
	// The blocked page's GET reached the server (CORS keeps the answer from the page, it is not
	// access control), but it asked confirm=1 and never saw the popup: nothing counts, not even
	// the impression, and the user's state is untouched (before confirmed impressions the GET
	// counted one and hid the popup for an hour).
	var bst struct {
		Totals totals `json:"totals"`
	}
	admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/popups/%d/stats", blocked), nil, &bst)
	assert.Zero(t, bst.Totals.Impressions+bst.Totals.Clicks+bst.Totals.Closes, "the refused origin's popup has no results")
	assertUntouched(t, "web-blocked-"+suffix)
}

// assertUntouched checks that uid's state holds no popup: nothing was counted for it.
func assertUntouched(t *testing.T, uid string) {
	t.Helper()
	var st struct {
		Popups           []any `json:"popups"`
		ImpressionsToday int   `json:"impressions_today"`
	}
	admin(t, http.MethodGet, "/admin/v1/users/"+uid+"/state", nil, &st)
	assert.Empty(t, st.Popups, "%s's state is untouched", uid)
	assert.Zero(t, st.ImpressionsToday)
}

func ptr(i int) *int { return &i }

func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// dropFirstAction fails the first POST of an action while *drop is 1, as a network failure, and
// counts it (drop becomes 2); every other request goes on.
func dropFirstAction(ctx context.Context, drop *atomic.Int32) {
	chromedp.ListenTarget(ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		go func() {
			ectx := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Target)
			if e.Request.Method == http.MethodPost && strings.HasSuffix(e.Request.URL, "/actions") && drop.CompareAndSwap(1, 2) {
				_ = fetch.FailRequest(e.RequestID, network.ErrorReasonConnectionFailed).Do(ectx)
				return
			}
			_ = fetch.ContinueRequest(e.RequestID).Do(ectx)
		}()
	})
	_ = chromedp.Run(ctx, fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/actions", RequestStage: fetch.RequestStageRequest}}))
}

// chromium starts a headless Chromium (Debian's package) for the test.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("POPUP_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	require.NotEmpty(t, path, "Chromium is not installed: `apt-get install -y chromium` (scripts/test.sh installs it), or set POPUP_CHROMIUM")
	// not t.TempDir: Chromium may still write its profile as it exits, which would fail the test
	profile, err := os.MkdirTemp("", "popup-sdk-chromium-")
	require.NoError(t, err)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.UserDataDir(profile),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.WindowSize(1024, 768),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelC()
		cancelA()                 // waits for Chromium to exit
		_ = os.RemoveAll(profile) // best effort: a leftover temp profile harms nothing
	})
	require.NoError(t, chromedp.Run(ctx), "starting Chromium")
	return ctx
}
