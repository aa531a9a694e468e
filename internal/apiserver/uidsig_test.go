package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/uidauth"
)

func TestUIDSignatureEndToEnd(t *testing.T) {
	t.Parallel()
	clk := newClock()
	cfg := testConfig(t)
	key := strings.Repeat("k", uidauth.MinKeyLen)
	cfg.UIDHMACKeys = []string{key}
	api := start(t, cfg, clk)
	id := api.createPopup(t, popupSpec("signed", nil))
	signed := func(uid string) map[string]string {
		return map[string]string{uidauth.Header: uidauth.Sign(key, uid, clk.Now())}
	}
	get := "http://" + api.public + "/api/v1/popup?uid=sig-user&platform=ios&app_version=1"
	post := "http://" + api.public + "/api/v1/popups/" + itoa(id) + "/actions"

	res := api.do(t, http.MethodGet, get, nil, nil)
	require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
	assert.Equal(t, "uid_signature_missing", res.Body["error"].(map[string]any)["code"])
	res = api.do(t, http.MethodGet, get, nil, signed("someone-else"))
	require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
	assert.Equal(t, "uid_signature_invalid", res.Body["error"].(map[string]any)["code"])

	res = api.do(t, http.MethodGet, get, nil, signed("sig-user"))
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	assert.EqualValues(t, id, res.Body["popup"].(map[string]any)["id"], "a signed uid gets its popup")

	click := map[string]any{"uid": "sig-user", "action": "click"}
	res = api.do(t, http.MethodPost, post, click, nil)
	assert.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
	assert.Equal(t, http.StatusAccepted, api.do(t, http.MethodPost, post, click, signed("sig-user")).Status)

	sig := signed("sig-user")
	clk.Advance(cfg.UIDHMACMaxAge + uidauth.MaxFutureSkew)
	res = api.do(t, http.MethodPost, post, click, sig)
	require.Equal(t, http.StatusUnauthorized, res.Status, res.Raw)
	assert.Equal(t, "uid_signature_expired", res.Body["error"].(map[string]any)["code"], "a replay after the max age is refused")
}
