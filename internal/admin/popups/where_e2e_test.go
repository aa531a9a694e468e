package popups_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestPlacementsTriggersAndRulesEndToEnd: through the admin API and a real popup-api, a popup for
// pro users at checkout and one a purchase triggers are stored as sent, shown where and when
// they apply and nowhere else, explained by the preview, and a bad rule is a 400 naming its path.
func TestPlacementsTriggersAndRulesEndToEnd(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Config(t), nil)
	pro := api.CreatePopup(t, apitest.PopupSpec("pro-checkout", map[string]any{"priority": 5, "targeting": map[string]any{
		"placements": []string{"checkout"},
		"rules": []any{map[string]any{"conditions": []any{
			map[string]any{"attr": "plan", "op": "in", "value": []string{"pro", "team"}},
			map[string]any{"attr": "app_build", "op": "semver_gte", "value": "8.2.0"}}}}}}))
	buy := api.CreatePopup(t, apitest.PopupSpec("thanks", map[string]any{"priority": 9, "targeting": map[string]any{
		"placements": []string{"checkout"},
		"trigger":    map[string]any{"event": "purchase_completed", "conditions": []any{map[string]any{"attr": "amount", "op": "gte", "value": 30}}}}}))

	res := api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(pro), nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	tg := res.Body["targeting"].(map[string]any)
	assert.Equal(t, []any{"checkout"}, tg["placements"])
	assert.Nil(t, tg["trigger"])
	assert.Equal(t, []any{map[string]any{"conditions": []any{
		map[string]any{"attr": "plan", "op": "in", "value": []any{"pro", "team"}},
		map[string]any{"attr": "app_build", "op": "semver_gte", "value": "8.2.0"}}}}, tg["rules"])

	const base = "platform=ios&app_version=8.1&"
	got, _ := api.Get(t, base+"uid=w1&attr.plan=pro&attr.app_build=8.2.1")
	assert.Zero(t, got, "the homepage has neither")
	got, _ = api.Get(t, base+"uid=w2&placement=checkout&attr.plan=free&attr.app_build=8.2.1")
	assert.Zero(t, got, "a free plan")
	got, _ = api.Get(t, base+"uid=w3&placement=checkout&attr.plan=pro&attr.app_build=8.2.1")
	assert.Equal(t, pro, got)
	got, _ = api.Get(t, base+"uid=w4&placement=checkout&event=purchase_completed&prop.amount=12")
	assert.Zero(t, got, "a purchase under 30")
	dec := api.Do(t, http.MethodPost, "http://"+api.Public+"/api/v1/decisions", map[string]any{"uid": "w5", "platform": "ios", "app_version": "8.1",
		"placement": "checkout", "event": "purchase_completed", "event_properties": map[string]any{"amount": 45.5}}, nil)
	require.Equal(t, http.StatusOK, dec.Status, dec.Raw)
	assert.EqualValues(t, buy, dec.Body["popup"].(map[string]any)["id"])

	res = api.AdminDo(t, http.MethodGet, "/admin/v1/preview?uid=w6&"+base+"placement=checkout&attr.plan=pro&attr.app_build=8.1", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.Equal(t, "checkout", res.Body["placement"])
	assert.Equal(t, map[int64]string{pro: "rules", buy: "trigger"}, apitest.ReasonsOf(t, res))
	for _, c := range res.Body["candidates"].([]any) {
		if c := c.(map[string]any); int64(c["id"].(float64)) == pro {
			assert.Equal(t, []any{map[string]any{"matched": false, "condition": float64(1), "attr": "app_build", "op": "semver_gte",
				"seen": "8.1", "why": "false"}}, c["rules"])
		}
	}

	res = api.AdminDo(t, http.MethodPost, "/admin/v1/popups", apitest.PopupSpec("bad-rule", map[string]any{"targeting": map[string]any{
		"rules": []any{map[string]any{"conditions": []any{map[string]any{"attr": "plan", "op": "like", "value": "p"}}}}}}))
	require.Equal(t, http.StatusBadRequest, res.Status, res.Raw)
	e := res.Body["error"].(map[string]any)
	assert.Equal(t, "validation_failed", e["code"])
	assert.Equal(t, "targeting.rules[0].conditions[0].op", e["fields"].([]any)[0].(map[string]any)["field"])
}
