package browsertest

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// The popup form's Where and when section (issue 51) in a real Chromium against a real popup-api:
// a popup's placements, trigger and rules load into the placement picker, the trigger editor and
// the rule builder; an operator adds a rule and saves, and nothing else of them changes; a rule
// the service refuses is shown at its condition; the list says it all in plain words.
func TestConsoleWhereSection(t *testing.T) {
	t.Parallel()
	in := apitest.Start(t, apitest.Config(t), nil)
	id := in.CreatePopup(t, map[string]any{"name": "thanks", "status": "draft", "title": "Thanks!", "targeting": map[string]any{
		"placements": []string{"checkout"},
		"trigger":    map[string]any{"event": "purchase_completed", "conditions": []any{map[string]any{"attr": "amount", "op": "gte", "value": 30}}},
		"rules":      []any{map[string]any{"conditions": []any{map[string]any{"attr": "plan", "op": "in", "value": []string{"pro", "team"}}}}}}})

	b := newBrowser(t, in)
	b.signIn()

	summary := b.text(`#popup-table tr[data-id="` + apitest.Itoa(id) + `"] td[data-label="Targeting"]`)
	assert.Contains(t, summary, "checkout · on purchase_completed (amount ≥ 30) · plan is one of pro, team")

	b.openPopup(id, 1)
	assert.Equal(t, "checkout", b.value("#f-placements"))
	var on bool
	b.eval(`document.querySelector('#f-trigger-on').checked`, &on)
	assert.True(t, on)
	assert.Equal(t, "purchase_completed", b.value("#f-trigger-event"))
	assert.Equal(t, "amount", b.value("#targeting-trigger-conditions-0--attr"))
	assert.Equal(t, "gte", b.value("#targeting-trigger-conditions-0--op"))
	assert.Equal(t, "30", b.value("#targeting-trigger-conditions-0--value"))
	assert.Equal(t, "plan", b.value("#targeting-rules-0--conditions-0--attr"))
	assert.Equal(t, "pro, team", b.value("#targeting-rules-0--conditions-0--value"))
	b.axeCheck("popup form: where and when")

	// a second rule that does not compile: refused, shown at its value
	b.run(chromedp.Click("#add-rule", chromedp.ByQuery))
	b.fill("#targeting-rules-1--conditions-0--attr", "email")
	b.fill("#targeting-rules-1--conditions-0--op", "matches")
	b.fill("#targeting-rules-1--conditions-0--value", "a(b")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#targeting-rules-1--conditions-0--value[aria-invalid=true]')`)
	b.axeCheck("popup form: a refused rule")

	// fixed: saved, the rest as it was
	b.fill("#targeting-rules-1--conditions-0--op", "ends_with")
	b.fill("#targeting-rules-1--conditions-0--value", "@corp.com")
	b.run(chromedp.Click("#save", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#popup-form[data-revision="2"]')`)
	res := in.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	tg := res.Body["targeting"].(map[string]any)
	assert.Equal(t, []any{"checkout"}, tg["placements"])
	assert.Equal(t, map[string]any{"event": "purchase_completed", "conditions": []any{map[string]any{"attr": "amount", "op": "gte", "value": float64(30)}}}, tg["trigger"])
	assert.Equal(t, []any{
		map[string]any{"conditions": []any{map[string]any{"attr": "plan", "op": "in", "value": []any{"pro", "team"}}}},
		map[string]any{"conditions": []any{map[string]any{"attr": "email", "op": "ends_with", "value": "@corp.com"}}},
	}, tg["rules"])
}
