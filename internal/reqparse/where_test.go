package reqparse

// The standard library only, no testify (the package comment says why).

import (
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

// scalars is q without its attributes and properties: the part that compares with ==.
func scalars(q HomepageQuery) [8]string {
	return [8]string{q.UID, q.Platform, q.AppVersion, q.Region, q.Lang, q.Confirm, q.Placement, q.Event}
}

func TestScanQueryReadsAttributesAndProperties(t *testing.T) {
	t.Parallel()
	q, perr := ScanQuery("uid=u1&attr.plan=pro&attr.app.build=8.2.0&attr.plan=free&prop.amount=45.5&attr.email=a%40corp.com&attr.note=a+b&event=buy")
	if perr != nil {
		t.Fatal(perr)
	}
	wantAttrs := []rules.Pair{{Key: "plan", Value: "pro"}, {Key: "app.build", Value: "8.2.0"}, {Key: "email", Value: "a@corp.com"}, {Key: "note", Value: "a b"}}
	if !reflect.DeepEqual(q.Attrs, wantAttrs) {
		t.Errorf("attrs = %v, want %v (the first plan wins)", q.Attrs, wantAttrs)
	}
	if !reflect.DeepEqual(q.Props, []rules.Pair{{Key: "amount", Value: "45.5"}}) {
		t.Errorf("props = %v", q.Props)
	}
	w, perr := q.Where()
	if perr != nil {
		t.Fatal(perr)
	}
	if v, ok := w.Attrs.Get("app.build"); !ok || v != "8.2.0" || w.Event != "buy" || w.Placement != "" {
		t.Errorf("Where() = %+v", w)
	}
}

// TestQueryLimitsNameTheParameter: every refusal is a 400 whose code and field name the input.
func TestQueryLimitsNameTheParameter(t *testing.T) {
	t.Parallel()
	many := func(prefix string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString("&" + prefix + "k" + strconv.Itoa(i) + "=v")
		}
		return b.String()
	}
	tests := []struct {
		name      string
		give      string
		wantCode  string
		wantField string
	}{
		{"51 attributes", "uid=u1" + many("attr.", 51), "invalid_attr", "attr.*"},
		{"21 properties", "uid=u1&event=e" + many("prop.", 21), "invalid_event_property", "prop.*"},
		{"value over 256 characters", "uid=u1&attr.plan=" + strings.Repeat("é", 257), "invalid_attr", "attr.plan"},
		{"value with a control character", "uid=u1&attr.plan=a%00b", "invalid_attr", "attr.plan"},
		{"value with a raw control character", "uid=u1&attr.plan=a\tb", "invalid_attr", "attr.plan"},
		{"value with a DEL", "uid=u1&attr.plan=a\x7fb", "invalid_attr", "attr.plan"},
		{"value over 256 ASCII characters", "uid=u1&attr.plan=" + strings.Repeat("x", 257), "invalid_attr", "attr.plan"},
		{"key with a '+'", "uid=u1&attr.a+b=v", "invalid_attr", `attr."a b"`},
		{"value not UTF-8", "uid=u1&attr.plan=%FF", "invalid_attr", "attr.plan"},
		{"key over 64 characters", "uid=u1&attr." + strings.Repeat("k", 65) + "=v", "invalid_attr", `attr."` + strings.Repeat("k", 64) + `"`},
		{"empty key", "uid=u1&attr.=v", "invalid_attr", `attr.""`},
		{"key with a space", "uid=u1&attr.a%20b=v", "invalid_attr", `attr."a b"`},
		{"bad escape in a value", "uid=u1&attr.plan=%zz", "invalid_query", ""},
		{"placement upper-case", "uid=u1&placement=Home", "invalid_placement", "placement"},
		{"placement too long", "uid=u1&placement=" + strings.Repeat("p", 65), "invalid_placement", "placement"},
		{"event with a space", "uid=u1&event=a+b", "invalid_event", "event"},
		{"properties without an event", "uid=u1&prop.amount=3", "invalid_event_property", "prop.amount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, perr := ScanQuery(tt.give)
			if perr == nil {
				_, perr = q.Where()
			}
			if perr == nil || perr.Code != tt.wantCode || perr.Field != tt.wantField {
				t.Fatalf("%q: %+v, want code %s field %s", tt.give, perr, tt.wantCode, tt.wantField)
			}
			if tt.wantField != "" && !strings.Contains(perr.Message, strings.TrimSuffix(tt.wantField, "*")) {
				t.Errorf("the message %q does not name %s", perr.Message, tt.wantField)
			}
		})
	}
	// at the limits: accepted
	q, perr := ScanQuery("uid=u1&event=e&attr.plan=" + strings.Repeat("é", 256) + many("attr.", 49) + many("prop.", 20))
	if perr != nil {
		t.Fatal(perr)
	}
	if _, perr := q.Where(); perr != nil || len(q.Attrs) != 50 || len(q.Props) != 20 {
		t.Fatalf("at the limits: %v, %d attrs, %d props", perr, len(q.Attrs), len(q.Props))
	}
}

// TestScanQueryReadsValuesAsSent: a plain value is taken as it stands, an escaped one unescaped,
// up to the limits.
func TestScanQueryReadsValuesAsSent(t *testing.T) {
	t.Parallel()
	tests := []struct{ give, want string }{
		{"pro", "pro"},
		{"", ""},
		{"~!*()'$,;:@/?", "~!*()'$,;:@/?"},
		{"a+b", "a b"},
		{"%E2%82%AC5", "€5"},
		{"%70ro", "pro"},
		{"é", "é"},
		{strings.Repeat("x", 256), strings.Repeat("x", 256)},
		{strings.Repeat("%78", 256), strings.Repeat("x", 256)},
	}
	for _, tt := range tests {
		q, perr := ScanQuery("uid=u1&attr.v=" + tt.give + "&attr.v=second")
		if perr != nil {
			t.Errorf("attr.v=%.40s: %v", tt.give, perr)
			continue
		}
		if !reflect.DeepEqual(q.Attrs, []rules.Pair{{Key: "v", Value: tt.want}}) {
			t.Errorf("attr.v=%.40s: %q, want %.40q", tt.give, q.Attrs, tt.want)
		}
	}
}

// TestScanQueryReleaseRecyclesThePairs: a query with attributes, parsed, decided and released,
// allocates nothing; the next query's pairs are its own.
func TestScanQueryReleaseRecyclesThePairs(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		q, perr := ScanQuery("uid=user-123&platform=ios&app_version=8.10.0&attr.plan=pro&attr.build=9.2.0&prop.x=1&event=e")
		if perr != nil {
			t.Fatal(perr)
		}
		if _, perr := q.Where(); perr != nil {
			t.Fatal(perr)
		}
		q.Release()
		if q.Attrs != nil || q.Props != nil {
			t.Fatalf("released, still %v %v", q.Attrs, q.Props)
		}
	})
	if allocs != 0 {
		t.Errorf("a query with attributes allocates %v times once released, want none", allocs)
	}
	q, _ := ScanQuery("attr.a=1&attr.b=2")
	q.Release()
	q, _ = ScanQuery("attr.c=3")
	if !reflect.DeepEqual(q.Attrs, []rules.Pair{{Key: "c", Value: "3"}}) || q.Props != nil {
		t.Errorf("after a released query: %v, %v", q.Attrs, q.Props)
	}
	q.Release()
	q.Release() // twice: nothing more to hand back
}

// TestDecisionBodyIsTheQuery: a body reads into the HomepageQuery its query string twin gives:
// numbers and booleans as their JSON text.
func TestDecisionBodyIsTheQuery(t *testing.T) {
	t.Parallel()
	body := `{"uid":"u1","platform":"ios","app_version":"8.10.0","region":"us","lang":"en","confirm":true,"placement":"checkout",` +
		`"event":"purchase_completed","event_properties":{"amount":45.5,"currency":"EUR"},"attrs":{"plan":"pro","beta":true,"age":31}}`
	got, perr := DecodeDecisionBody([]byte(body))
	if perr != nil {
		t.Fatal(perr)
	}
	want, perr := ScanQuery("uid=u1&platform=ios&app_version=8.10.0&region=us&lang=en&confirm=true&placement=checkout&event=purchase_completed" +
		"&prop.amount=45.5&prop.currency=EUR&attr.plan=pro&attr.beta=true&attr.age=31")
	if perr != nil {
		t.Fatal(perr)
	}
	if scalars(got) != scalars(want) {
		t.Errorf("body %v, query %v", scalars(got), scalars(want))
	}
	gw, _ := got.Where()
	ww, _ := want.Where()
	if !reflect.DeepEqual(gw, ww) {
		t.Errorf("body's where %+v, query's %+v", gw, ww)
	}
}

func TestDecisionBodyRefusals(t *testing.T) {
	t.Parallel()
	big := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `"k` + strconv.Itoa(i) + `":1`
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []struct {
		give      string
		wantCode  string
		wantField string
	}{
		{`{"uid":`, "invalid_json", ""},
		{`[]`, "invalid_json", ""},
		{`{"uid":"u1","attrs":[1]}`, "invalid_attr", "attrs"},
		{`{"uid":"u1","attrs":{"plan":null}}`, "invalid_attr", "attr.plan"},
		{`{"uid":"u1","attrs":{"plan":{"x":1}}}`, "invalid_attr", "attr.plan"},
		{`{"uid":"u1","attrs":{"plan":["a"]}}`, "invalid_attr", "attr.plan"},
		{`{"uid":"u1","attrs":{"a b":"x"}}`, "invalid_attr", `attr."a b"`},
		{`{"uid":"u1","attrs":{"plan":"` + strings.Repeat("x", 257) + `"}}`, "invalid_attr", "attr.plan"},
		{`{"uid":"u1","attrs":` + big(51) + `}`, "invalid_attr", "attrs"},
		{`{"uid":"u1","event":"e","event_properties":` + big(21) + `}`, "invalid_event_property", "event_properties"},
		{`{"uid":"u1","confirm":1}`, "invalid_confirm", "confirm"},
	}
	for _, tt := range tests {
		_, perr := DecodeDecisionBody([]byte(tt.give))
		if perr == nil || perr.Code != tt.wantCode || perr.Field != tt.wantField {
			t.Errorf("%.80s: %+v, want code %s field %s", tt.give, perr, tt.wantCode, tt.wantField)
		}
	}
}

// whereCodes are the codes a refused placement, event or attribute may carry.
var whereCodes = []string{"invalid_query", "invalid_attr", "invalid_event_property", "invalid_placement", "invalid_event"}

// checkWhere fails t when an accepted w breaks a limit the contract promises.
func checkWhere(t *testing.T, input string, w popup.Where) {
	t.Helper()
	if w.Attrs.Len() > rules.MaxRequestKeys || w.Props.Len() > rules.MaxProperties ||
		w.Placement != "" && !popup.ValidPlacement(w.Placement) || w.Event != "" && !popup.ValidEvent(w.Event) ||
		w.Event == "" && w.Props.Len() > 0 {
		t.Fatalf("%q accepted as %+v", input, w)
	}
	for _, a := range [][]rules.Pair{w.Attrs.Pairs(), w.Props.Pairs()} {
		for _, p := range a {
			if !rules.ValidKey(p.Key) || !rules.ValidValue(p.Value) {
				t.Fatalf("%q accepted the pair %q=%q", input, p.Key, p.Value)
			}
		}
	}
}

// FuzzWhereQuery: whatever the query string, the parser answers (no panic) with a where inside
// the limits or a refusal carrying a known code; never anything else.
func FuzzWhereQuery(f *testing.F) {
	f.Add("uid=u1&placement=checkout&event=buy&prop.amount=3&attr.plan=pro")
	f.Add("attr.a%2Eb=%E2%82%AC&attr.a.b=x&prop.p=1")
	f.Add("attr.=&prop.=&event=")
	f.Fuzz(func(t *testing.T, raw string) {
		q, perr := ScanQuery(raw)
		if perr == nil {
			var w popup.Where
			if w, perr = q.Where(); perr == nil {
				checkWhere(t, raw, w)
				return
			}
		}
		if !slices.Contains(whereCodes, perr.Code) {
			t.Fatalf("%q: unknown code %q", raw, perr.Code)
		}
	})
}

// FuzzDecisionBody: whatever the body, the parser answers within the limits or refuses with a
// known code; and an accepted body answers as its query string twin does.
func FuzzDecisionBody(f *testing.F) {
	f.Add(`{"uid":"u1","platform":"ios","app_version":"8","placement":"checkout","event":"e","event_properties":{"a":1},"attrs":{"plan":"pro","b":true}}`)
	f.Add(`{"attrs":{"x":-0.5e3,"y":"\u00e9"}}`)
	f.Add(`{"confirm":"1","attrs":null}`)
	codes := append([]string{"invalid_json", "invalid_confirm"}, whereCodes...)
	f.Fuzz(func(t *testing.T, body string) {
		q, perr := DecodeDecisionBody([]byte(body))
		if perr != nil {
			if !slices.Contains(codes, perr.Code) {
				t.Fatalf("%q: unknown code %q", body, perr.Code)
			}
			return
		}
		// the twin: the same fields as a query string
		v := url.Values{}
		for k, s := range map[string]string{"uid": q.UID, "platform": q.Platform, "app_version": q.AppVersion, "region": q.Region,
			"lang": q.Lang, "confirm": q.Confirm, "placement": q.Placement, "event": q.Event} {
			v.Set(k, s)
		}
		for _, p := range q.Attrs {
			v.Set("attr."+p.Key, p.Value)
		}
		for _, p := range q.Props {
			v.Set("prop."+p.Key, p.Value)
		}
		twin, perr := ScanQuery(v.Encode())
		if perr != nil {
			t.Fatalf("%q accepted, its query twin %q refused: %v", body, v.Encode(), perr)
		}
		w, werr := q.Where()
		tw, twerr := twin.Where()
		if scalars(q) != scalars(twin) || (werr == nil) != (twerr == nil) {
			t.Fatalf("%q: body %v (%v), query %v (%v)", body, scalars(q), werr, scalars(twin), twerr)
		}
		if werr == nil {
			checkWhere(t, body, w)
			if !reflect.DeepEqual(w, tw) {
				t.Fatalf("%q: body's where %+v, query's %+v", body, w, tw)
			}
		}
	})
}
