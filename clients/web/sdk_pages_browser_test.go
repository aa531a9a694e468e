//go:build clients

package web

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SDK on real pages (issue 52), against the popup-api scripts/clients.sh starts: an answer
// later than the SDK's budget counts nothing, two concurrent show() calls show one dialog and
// count one impression, a uid left undefined is an anonymous id of its own, bad options are
// refused by name, labels translate, and every popup shape passes axe.

type pageShown struct {
	Shown      bool   `json:"shown"`
	DecisionID string `json:"decisionId"`
	PopupID    int64  `json:"popupId"`
	Confirmed  bool   `json:"confirmed"`
}

// createShape creates an active web popup for region with the given creative fields.
func createShape(t *testing.T, name, region string, creative map[string]any) int64 {
	t.Helper()
	var p struct {
		ID int64 `json:"id"`
	}
	body := map[string]any{"name": name, "status": "active",
		"targeting": map[string]any{"platforms": []string{"web"}, "regions": []string{region}}}
	for k, v := range creative {
		body[k] = v
	}
	admin(t, http.MethodPost, "/admin/v1/popups", body, &p)
	return p.ID
}

// impressions waits until popup id's results count want impressions (or 20 s pass) and returns
// what they count.
func impressions(t *testing.T, id, want int64) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st struct {
			Totals totals `json:"totals"`
		}
		admin(t, http.MethodGet, fmt.Sprintf("/admin/v1/popups/%d/stats", id), nil, &st)
		if st.Totals.Impressions == want || time.Now().After(deadline) {
			return st.Totals.Impressions
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestSDKOnRealPages(t *testing.T) {
	api := env(t, "POPUP_CLIENTS_API")
	addr := env(t, "POPUP_CLIENTS_PAGE_ADDR")
	page(t, addr, api)
	axe, err := os.ReadFile("../../node_modules/axe-core/axe.min.js")
	require.NoError(t, err, "axe-core: run `npm ci` at the repository root (scripts/test.sh does)")
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)

	ctx := chromium(t)
	slowRegion := "slow" + suffix
	holdDecisions(ctx, "region="+slowRegion, 1500*time.Millisecond)
	run := func(actions ...chromedp.Action) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Run(tctx, actions...))
	}
	open := func() {
		t.Helper()
		run(chromedp.Navigate("http://"+addr+"/"), chromedp.Poll(`window.ready === true`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	}
	showWith := func(opts string) pageShown {
		t.Helper()
		var s pageShown
		run(chromedp.Evaluate(`window.showWith(`+opts+`)`, &s, awaitPromise))
		return s
	}
	axeClean := func(shape string) {
		t.Helper()
		var violations []map[string]any
		run(chromedp.Evaluate(`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
			.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))})))`, &violations, awaitPromise))
		assert.Empty(t, violations, "axe on the %s popup", shape)
	}
	closeDialog := func() {
		t.Helper()
		run(chromedp.Click(`.popup-close`, chromedp.ByQuery))
		var r actionResult
		run(chromedp.Evaluate(`window.done`, &r, awaitPromise))
		assert.True(t, r.Accepted, "the close is recorded")
	}

	open()
	run(chromedp.Evaluate(string(axe), nil))

	// 1. A slow API: the answer comes after the SDK's budget. The server decided (and reserved),
	// the page showed nothing: nothing counts, the user's state is untouched. (Before confirmed
	// impressions the GET counted one and hid the popup for an hour.)
	slow := createShape(t, "slow "+suffix, slowRegion, map[string]any{"title": "Slow", "content": "late"})
	s := showWith(fmt.Sprintf(`{uid: %q, region: %q, budgetMs: 300}`, "web-slow-"+suffix, slowRegion))
	assert.False(t, s.Shown, "an answer over the budget shows nothing")
	var errs []string
	run(chromedp.Evaluate(`window.errors || []`, &errs))
	assert.Contains(t, errs, "decide network", "the error hook hears of it")
	assert.Zero(t, impressions(t, slow, 0), "the late answer counts no impression")
	assertUntouched(t, "web-slow-"+suffix)

	// 2. Two concurrent show() calls (React StrictMode's double effect): one dialog, one
	// impression.
	twiceRegion := "twice" + suffix
	twice := createShape(t, "twice "+suffix, twiceRegion, map[string]any{"title": "Once", "content": "only one"})
	var tw struct {
		Same       bool   `json:"same"`
		Dialogs    int    `json:"dialogs"`
		DecisionID string `json:"decisionId"`
		Confirmed  bool   `json:"confirmed"`
	}
	run(chromedp.Evaluate(fmt.Sprintf(`window.showTwice({uid: %q, region: %q})`, "web-twice-"+suffix, twiceRegion), &tw, awaitPromise))
	assert.True(t, tw.Same, "the second show() joins the first")
	assert.Equal(t, 1, tw.Dialogs, "one dialog")
	assert.True(t, tw.Confirmed)
	closeDialog()
	assert.Equal(t, int64(1), impressions(t, twice, 1), "one impression")

	// 3. uid undefined: an anonymous id generated and kept, never the uid "undefined".
	anonRegion := "anon" + suffix
	createShape(t, "anon "+suffix, anonRegion, map[string]any{"title": "Hello", "content": "anonymous"})
	var anon struct {
		UID, Stored string
		Shown       bool
	}
	run(chromedp.Evaluate(fmt.Sprintf(`(async () => { localStorage.removeItem('popup-anon-uid');
		const c = window.client({uid: undefined, region: %q}); const s = await c.show(document.body);
		if (s) { document.querySelector('.popup-close').click(); await s.done; }
		return {uid: c.uid, stored: localStorage.getItem('popup-anon-uid'), shown: !!s}; })()`, anonRegion), &anon, awaitPromise))
	assert.True(t, strings.HasPrefix(anon.UID, "anon-"), "an anonymous id: %q", anon.UID)
	assert.Equal(t, anon.UID, anon.Stored, "kept in localStorage")
	assert.True(t, anon.Shown)
	assertUntouched(t, "undefined")
	// identify() switches to the logged-in uid, identify(null) back to the same anonymous id
	var ids []string
	run(chromedp.Evaluate(`(() => { const c = window.client({}); const a = c.uid; c.identify('member-1'); const m = c.uid;
		c.identify(null); return [a, m, c.uid]; })()`, &ids))
	assert.Equal(t, []string{anon.UID, "member-1", anon.UID}, ids)

	// convert(): a goal's conversion is accepted (goals reach every instance within about a
	// second of their creation: retried with one event id, applied once); an unknown goal is
	// refused and the hook hears why; a value from a page without the uid signature is refused
	// (docs/CONTRACT.md §14: a value needs an ingest key or the signature), and the hook hears it.
	goal := "sdk" + suffix
	var g struct {
		Key string `json:"key"`
	}
	admin(t, http.MethodPost, "/admin/v1/goals", map[string]any{"key": goal, "name": "SDK " + suffix}, &g)
	var conv struct {
		Accepted bool     `json:"accepted"`
		Unknown  bool     `json:"unknown"`
		Valued   bool     `json:"valued"`
		Errors   []string `json:"errors"`
	}
	run(chromedp.Evaluate(fmt.Sprintf(`(async () => { window.errors = []; const c = window.client({uid: %q});
		const unknown = await c.convert('no-such-goal-%s');
		let r; for (let i = 0; i < 20; i++) { r = await c.convert(%q, {eventId: 'order-1'}); if (r.accepted) break;
			await new Promise((ok) => setTimeout(ok, 250)); }
		const valued = await c.convert(%q, {eventId: 'order-2', value: 9.99});
		return {accepted: r.accepted, unknown: unknown.accepted, valued: valued.accepted, errors: window.errors}; })()`, "web-conv-"+suffix, suffix, goal, goal), &conv, awaitPromise))
	assert.True(t, conv.Accepted, "the conversion is accepted")
	assert.False(t, conv.Unknown)
	assert.Contains(t, conv.Errors, "convert unknown_goal")
	assert.False(t, conv.Valued, "a value without the uid signature is refused")
	assert.Contains(t, conv.Errors, "convert ingest_key_required")

	// 4. Bad options are refused by name, before any call.
	var refusals []string
	run(chromedp.Evaluate(`['a b', 'x'.repeat(65)].map((uid) => { try { window.client({uid}); return 'accepted'; } catch (e) { return e.message; } })
		.concat(['8.x', ''].map((appVersion) => { try { window.client({uid: 'u', appVersion}); return 'accepted'; } catch (e) { return e.message; } }))`, &refusals))
	require.Len(t, refusals, 4)
	for _, r := range refusals[:2] {
		assert.Contains(t, r, "uid must be")
	}
	for _, r := range refusals[2:] {
		assert.Contains(t, r, "appVersion must be")
	}

	// 5. Every popup shape passes axe, with the labels translated; the page behind is inert and
	// does not scroll while the dialog is open.
	shapes := []struct {
		name     string
		creative map[string]any
	}{
		{"full", map[string]any{"title": "Winter sale", "content": "30% off", "image_url": "https://img.example/sale.png",
			"link_url": "https://shop.example/sale", "buttons": []map[string]any{{"text": "Shop now", "link_url": "https://shop.example/now"}, {"text": "Later"}}}},
		{"title only", map[string]any{"title": "Just a title"}},
		{"content only, linked", map[string]any{"content": "Read the news", "link_url": "https://shop.example/news"}},
		{"image and buttons", map[string]any{"image_url": "https://img.example/b.png", "image_alt": "A blue scarf", "buttons": []map[string]any{{"text": "OK"}}}},
		{"image only", map[string]any{"image_url": "https://img.example/sale.png", "image_alt": "Winter sale: 30% off everything",
			"link_url": "https://shop.example/sale"}},
	}
	for i, sh := range shapes {
		region := fmt.Sprintf("shape%d%s", i, suffix)
		createShape(t, "shape "+sh.name+" "+suffix, region, sh.creative)
		s := showWith(fmt.Sprintf(`{uid: %q, region: %q, labels: {close: 'Fermer'}}`, fmt.Sprintf("web-shape%d-%s", i, suffix), region))
		require.True(t, s.Shown, sh.name)
		var open struct {
			Label     string
			Inert     bool
			Overflow  string
			InlineCSS int
		}
		run(chromedp.Evaluate(`({label: document.querySelector('.popup-close').getAttribute('aria-label'),
			inert: document.querySelector('main').inert, overflow: getComputedStyle(document.documentElement).overflow,
			inlineCSS: document.querySelectorAll('.popup-backdrop [style], .popup-backdrop[style]').length})`, &open))
		assert.Equal(t, "Fermer", open.Label, "the close label translates")
		assert.True(t, open.Inert, "the page behind is inert")
		assert.Equal(t, "hidden", open.Overflow, "the page does not scroll")
		assert.Zero(t, open.InlineCSS, "no inline style: the page themes the popup-* classes")
		axeClean(sh.name)
		if sh.name == "image only" {
			// the image-only popup is named by its image_alt, and its image opens its link
			var img struct {
				Name   string
				Linked bool
			}
			run(chromedp.Evaluate(`({name: document.querySelector('[role=dialog]').getAttribute('aria-label'),
				linked: !!document.querySelector('.popup-dialog a[href] > img')})`, &img))
			assert.Equal(t, "Winter sale: 30% off everything", img.Name)
			assert.True(t, img.Linked, "the image is clickable")
			run(chromedp.Click(`.popup-dialog a[href] > img`, chromedp.ByQuery))
			var r actionResult
			run(chromedp.Evaluate(`window.done`, &r, awaitPromise))
			assert.Equal(t, "click", r.Action)
			assert.True(t, r.Accepted)
			continue
		}
		closeDialog()
		var after struct {
			Inert    bool
			Overflow string
		}
		run(chromedp.Evaluate(`({inert: document.querySelector('main').inert, overflow: getComputedStyle(document.documentElement).overflow})`, &after))
		assert.False(t, after.Inert, "the page is live again")
		assert.NotEqual(t, "hidden", after.Overflow)
	}

	// 6. The page themes the popup through custom properties.
	themeRegion := "theme" + suffix
	createShape(t, "theme "+suffix, themeRegion, map[string]any{"title": "Themed"})
	run(chromedp.Evaluate(`document.documentElement.style.setProperty('--popup-bg', 'rgb(1, 2, 3)')`, nil))
	require.True(t, showWith(fmt.Sprintf(`{uid: %q, region: %q}`, "web-theme-"+suffix, themeRegion)).Shown)
	var bg string
	run(chromedp.Evaluate(`getComputedStyle(document.querySelector('.popup-dialog')).backgroundColor`, &bg))
	assert.Equal(t, "rgb(1, 2, 3)", bg)
	closeDialog()

	// 7. A placement popup for pro users (issue 51), across origins: shown at checkout to a pro
	// user, not on the homepage, not to a free one; a purchase it waits for shows it through
	// the POST twin once the attributes make the query long.
	whereRegion := "where" + suffix
	checkout := createShape(t, "checkout "+suffix, whereRegion, map[string]any{"title": "Pro checkout",
		"targeting": map[string]any{"platforms": []string{"web"}, "regions": []string{whereRegion}, "placements": []string{"checkout"},
			"rules": []any{map[string]any{"conditions": []any{map[string]any{"attr": "plan", "op": "eq", "value": "pro"}}}}}})
	opts := func(uid string) string { return fmt.Sprintf(`{uid: %q, region: %q}`, uid+suffix, whereRegion) }
	showWhere := func(o, where string) pageShown {
		t.Helper()
		var s pageShown
		run(chromedp.Evaluate(`window.showWhere(`+o+`, `+where+`)`, &s, awaitPromise))
		return s
	}
	assert.False(t, showWhere(opts("web-home-"), `{attrs: {plan: 'pro'}}`).Shown, "not on the homepage")
	assert.False(t, showWhere(opts("web-free-"), `{placement: 'checkout', attrs: {plan: 'free'}}`).Shown, "not to a free plan")
	got := showWhere(opts("web-pro-"), `{placement: 'checkout', attrs: {plan: 'pro'}}`)
	require.True(t, got.Shown, "at checkout, to a pro user")
	assert.Equal(t, checkout, got.PopupID)
	assert.True(t, got.Confirmed)
	closeDialog()
	long := `{placement: 'checkout', attrs: Object.assign({plan: 'pro'}, Object.fromEntries(Array.from({length: 40}, (_, i) => ['k' + i, 'x'.repeat(200)])))}`
	got = showWhere(opts("web-long-"), long)
	require.True(t, got.Shown, "a long query goes as POST /api/v1/decisions, answered alike")
	assert.Equal(t, checkout, got.PopupID)
	closeDialog()
}

// holdDecisions holds the answers of the decision GETs whose URL contains match for hold before
// the page gets them: the server has answered (and decided), the page hears of it late.
func holdDecisions(ctx context.Context, match string, hold time.Duration) {
	chromedp.ListenTarget(ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		go func() {
			ectx := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Target)
			if strings.Contains(e.Request.URL, match) {
				time.Sleep(hold) // the slow network under test, not a synchronisation
			}
			_ = fetch.ContinueRequest(e.RequestID).Do(ectx)
		}()
	})
	_ = chromedp.Run(ctx, fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/api/v1/popup?*", RequestStage: fetch.RequestStageResponse}}))
}
