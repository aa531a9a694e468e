package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
	"popupsvc/internal/snapshot"
)

// whereRouter is the real public router over three popups: 1 on the homepage for pro and team
// plans, 2 on checkout, 3 on checkout for a purchase of at least 30; the user store keeps nothing,
// so every request decides on a fresh state.
func whereRouter(t *testing.T) http.Handler {
	t.Helper()
	mk := func(id int64, prio int, tg popup.Targeting) popup.Popup {
		tg.RolloutPercent = 100
		return popup.Popup{ID: id, Name: "p" + strconv.FormatInt(id, 10), Status: popup.StatusActive, Priority: prio, Targeting: tg,
			ReshowAfterSeconds: 60, Creative: popup.Creative{Title: "popup " + strconv.FormatInt(id, 10)}}
	}
	s := snapshot.BuildWith(1, []popup.Popup{
		mk(1, 1, popup.Targeting{Rules: []rules.Rule{{Conditions: []rules.Condition{
			{Attr: "plan", Op: rules.OpIn, Values: []rules.Value{rules.Str("pro"), rules.Str("team")}},
			{Attr: "age", Op: rules.OpGte, Values: []rules.Value{rules.Num("18")}}}}}}),
		mk(2, 1, popup.Targeting{Placements: []string{"checkout"}}),
		mk(3, 2, popup.Targeting{Placements: []string{"checkout"}, Trigger: &popup.Trigger{Event: "purchase_completed",
			Conditions: []rules.Condition{{Attr: "amount", Op: rules.OpGte, Values: []rules.Value{rules.Num("30")}}}}}),
	}, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)
	holder := &snapshot.Holder{}
	holder.Store(s)
	d := &decide.Decider{Snapshots: holder, Users: &memUsers{}, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second}
	p := &Public{Snapshots: holder, Decider: d, Now: func() time.Time { return t0 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return p.Router()
}

// decisionIDs are the fresh ids each decision gets: the only bytes two answers to the same
// inputs may differ in.
var decisionIDs = regexp.MustCompile(`"decision_id":"[^"]+"`)

func masked(body string) string { return decisionIDs.ReplaceAllString(body, `"decision_id":"…"`) }

// TestDecisionsTwinAnswersAsTheGet: POST /api/v1/decisions with a JSON body answers exactly as
// GET /api/v1/popup with the same inputs as a query string (status, content type and body, the
// fresh decision id aside), shown, not shown and refused alike.
func TestDecisionsTwinAnswersAsTheGet(t *testing.T) {
	t.Parallel()
	h := whereRouter(t)
	const base = "uid=u1&platform=ios&app_version=8.10.0"
	const baseJSON = `"uid":"u1","platform":"ios","app_version":"8.10.0"`
	tests := []struct {
		name      string
		query     string
		body      string
		wantShown string // the popup id shown; "" for none or a refusal
		wantCode  int
	}{
		{"rules hold", base + "&attr.plan=pro&attr.age=31", `{` + baseJSON + `,"attrs":{"plan":"pro","age":31}}`, "1", 200},
		{"rules fail", base + "&attr.plan=free&attr.age=31", `{` + baseJSON + `,"attrs":{"plan":"free","age":31}}`, "", 200},
		{"age mistyped", base + "&attr.plan=pro&attr.age=old", `{` + baseJSON + `,"attrs":{"plan":"pro","age":"old"}}`, "", 200},
		{"checkout", base + "&placement=checkout", `{` + baseJSON + `,"placement":"checkout"}`, "2", 200},
		{"a purchase", base + "&placement=checkout&event=purchase_completed&prop.amount=45.5",
			`{` + baseJSON + `,"placement":"checkout","event":"purchase_completed","event_properties":{"amount":45.5}}`, "3", 200},
		{"a small purchase", base + "&placement=checkout&event=purchase_completed&prop.amount=12",
			`{` + baseJSON + `,"placement":"checkout","event":"purchase_completed","event_properties":{"amount":12}}`, "", 200},
		{"a placement nobody lists", base + "&placement=settings", `{` + baseJSON + `,"placement":"settings"}`, "", 200},
		{"value over the limit", base + "&attr.plan=" + strings.Repeat("x", 257), `{` + baseJSON + `,"attrs":{"plan":"` + strings.Repeat("x", 257) + `"}}`, "", 400},
		{"a bad placement", base + "&placement=Check%20out", `{` + baseJSON + `,"placement":"Check out"}`, "", 400},
		{"no uid", "platform=ios&attr.plan=pro", `{"platform":"ios","attrs":{"plan":"pro"}}`, "", 400},
		{"properties without an event", base + "&prop.amount=3", `{` + baseJSON + `,"event_properties":{"amount":3}}`, "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			get := serve(h, http.MethodGet, "/api/v1/popup?"+tt.query, "")
			post := serve(h, http.MethodPost, "/api/v1/decisions", tt.body)
			require.Equal(t, tt.wantCode, get.Code, get.Body.String())
			assert.Equal(t, get.Code, post.Code)
			assert.Equal(t, get.Header().Get("Content-Type"), post.Header().Get("Content-Type"))
			assert.Equal(t, masked(get.Body.String()), masked(post.Body.String()))
			var answer struct {
				Popup *struct{ ID int64 } `json:"popup"`
			}
			require.NoError(t, json.Unmarshal(get.Body.Bytes(), &answer))
			if tt.wantShown == "" {
				assert.Nil(t, answer.Popup)
				return
			}
			require.NotNil(t, answer.Popup)
			assert.Equal(t, tt.wantShown, strconv.FormatInt(answer.Popup.ID, 10))
		})
	}
}

// TestAttributeLimitsAreA400NamingTheAttribute: the error names the attribute in its message and
// its fields.
func TestAttributeLimitsAreA400NamingTheAttribute(t *testing.T) {
	t.Parallel()
	h := whereRouter(t)
	rec := serve(h, http.MethodGet, "/api/v1/popup?uid=u1&platform=ios&app_version=8&attr.plan="+strings.Repeat("x", 300), "")
	require.Equal(t, http.StatusBadRequest, rec.Code)
	assert.JSONEq(t, `{"error":{"code":"invalid_attr","message":"attr.plan: the value must be `+rules.ValueRule+`",`+
		`"fields":[{"field":"attr.plan","message":"attr.plan: the value must be `+rules.ValueRule+`"}]}}`, rec.Body.String())

	rec = serve(h, http.MethodPost, "/api/v1/decisions", `{"uid":"u1","platform":"ios","app_version":"8","attrs":{"plan":"`+strings.Repeat("x", 33<<10)+`"}}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, "a body over 32 KiB")
	rec = serve(h, http.MethodPost, "/api/v1/decisions", `{"uid":`)
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), `"invalid_json"`)
}
