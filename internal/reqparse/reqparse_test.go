package reqparse

// The standard library only, no testify: `go test -fuzz` compiles everything these tests import
// a second time, with coverage instrumentation (the package comment says why that matters).

import (
	"net/url"
	"slices"
	"testing"

	"popupsvc/internal/event"
)

func TestScanQueryAgreesWithURLValues(t *testing.T) {
	t.Parallel()
	tests := []string{
		"uid=u1&platform=ios&app_version=8.10.0",
		"uid=a%3Ab&platform=web&app_version=1&region=cn&lang=zh",
		"platform=android&uid=x&uid=y&app_version=2&extra=1",
		"uid=&platform=ios",
		"uid=a+b&platform=ios&app_version=1",
		"",
		"&&uid=z&&",
		"uid",
		"platform&platform=ios", // an empty first occurrence still wins (found by FuzzScanQuery)
		"uid=&uid=u2&platform=ios",
		"uid=u1&platform=web&app_version=1&confirm=1&confirm=0",
		"uid=u1&placement=checkout&event=purchase_completed&placement=home",
	}
	for _, give := range tests {
		t.Run(give, func(t *testing.T) {
			got, perr := ScanQuery(give)
			if perr != nil {
				t.Fatalf("ScanQuery(%q): %v", give, perr)
			}
			want, err := url.ParseQuery(give)
			if err != nil {
				t.Fatalf("url.ParseQuery(%q): %v", give, err)
			}
			if w := (HomepageQuery{UID: want.Get("uid"), Platform: want.Get("platform"), AppVersion: want.Get("app_version"),
				Region: want.Get("region"), Lang: want.Get("lang"), Confirm: want.Get("confirm"), Placement: want.Get("placement"),
				Event: want.Get("event")}); scalars(got) != scalars(w) || got.Attrs != nil || got.Props != nil {
				t.Errorf("ScanQuery(%q) = %+v, url.Values says %+v", give, got, w)
			}
		})
	}
}

func TestScanQueryRejectsBadEscapes(t *testing.T) {
	t.Parallel()
	_, perr := ScanQuery("uid=%zz&platform=ios")
	if perr == nil || perr.Code != "invalid_query" {
		t.Fatalf("ScanQuery with a bad escape: %v, want invalid_query", perr)
	}
}

func TestScanQueryAllocatesNothing(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = ScanQuery("uid=user-123&platform=ios&app_version=8.10.0&region=cn&lang=en")
	})
	if allocs != 0 {
		t.Errorf("ScanQuery allocates %v times, want none", allocs)
	}
}

func TestDecodeActionBodyAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want ActionBody
	}{
		{`{"uid":"u1","action":"click","event_id":"e-1"}`, ActionBody{UID: "u1", Action: "click", EventID: "e-1"}},
		{`{"uid":"u1","action":"close","decision_id":"d:1"}`, ActionBody{UID: "u1", Action: "close", DecisionID: "d:1"}},
		{`{"uid":"u1","action":"click","decision_id":"0a1b-z~7.2"}`, ActionBody{UID: "u1", Action: "click", DecisionID: "0a1b-z~7.2"}},
		{`{"uid":"u1","action":"click","extra":[1]}`, ActionBody{UID: "u1", Action: "click"}},
		{`{"uid":"u1","action":"click","button":0}`, ActionBody{UID: "u1", Action: "click", Button: event.ButtonAt(0)}},
		{`{"uid":"u1","action":"click","button":9}`, ActionBody{UID: "u1", Action: "click", Button: event.ButtonAt(9)}},
		{`{"uid":"u1","action":"click","button":null}`, ActionBody{UID: "u1", Action: "click"}},
		{`{"uid":"u1","action":"click","button" : 2 }`, ActionBody{UID: "u1", Action: "click", Button: event.ButtonAt(2)}},
		{`{"uid":"u1","action":"close"}`, ActionBody{UID: "u1", Action: "close"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, perr := DecodeActionBody([]byte(tt.give))
			if perr != nil || got != tt.want {
				t.Errorf("DecodeActionBody(%s) = %+v, %v; want %+v", tt.give, got, perr, tt.want)
			}
		})
	}
}

func TestDecodeActionBodyRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want string // the error code
	}{
		{`{"uid":`, "invalid_json"},
		{`[]`, "invalid_json"},
		{"{\"uid\":\"u\x01\",\"action\":\"click\"}", "invalid_json"}, // a raw control character, as encoding/json
		{`{"action":"click"}`, "invalid_uid"},
		{`{"uid":"a b","action":"click"}`, "invalid_uid"},
		{`{"uid":"u1","action":"exposure"}`, "invalid_action"},
		{`{"uid":"u1","action":"impression"}`, "invalid_decision_id"}, // a confirmation names its decision
		{`{"uid":"u1","action":"impression","decision_id":"d1","button":0}`, "invalid_button"},
		{`{"uid":"u1","action":"click","event_id":"e 1"}`, "invalid_event_id"},
		{`{"uid":"u1","action":"click","decision_id":"d/1"}`, "invalid_decision_id"},
		{`{"uid":"u1","action":"click","button":-1}`, "invalid_button"},
		{`{"uid":"u1","action":"click","button":1.5}`, "invalid_button"},
		{`{"uid":"u1","action":"click","button":1.0}`, "invalid_button"},
		{`{"uid":"u1","action":"click","button":1e0}`, "invalid_button"},
		{`{"uid":"u1","action":"click","button":"1"}`, "invalid_button"},
		{`{"uid":"u1","action":"click","button":255}`, "invalid_button"},
		{`{"uid":"u1","action":"click","button":[0]}`, "invalid_button"},
		{`{"uid":"u1","action":"close","button":0}`, "invalid_button"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, perr := DecodeActionBody([]byte(tt.give))
			if perr == nil || perr.Code != tt.want {
				t.Errorf("DecodeActionBody(%q): %v, want %s", tt.give, perr, tt.want)
			}
		})
	}
}

func FuzzScanQuery(f *testing.F) {
	f.Add("uid=u1&platform=ios&app_version=8.10.0")
	f.Add("uid=%41&platform=web")
	f.Fuzz(func(t *testing.T, raw string) {
		got, perr := ScanQuery(raw)
		want, err := url.ParseQuery(raw)
		if perr != nil || err != nil {
			return // either may refuse what the other tolerates (e.g. ';'); both must not panic
		}
		if got.UID != want.Get("uid") || got.Platform != want.Get("platform") || got.AppVersion != want.Get("app_version") {
			t.Errorf("ScanQuery(%q) = %+v; url.Values: uid %q platform %q app_version %q",
				raw, got, want.Get("uid"), want.Get("platform"), want.Get("app_version"))
		}
	})
}

func FuzzActionBody(f *testing.F) {
	f.Add(`{"uid":"u1","action":"click","event_id":"e-1"}`)
	f.Add(`{"uid":"u1","action":"close","decision_id":"d"}`)
	f.Add(`{"uid":`)
	f.Add(`{"uid":"u1","action":"click","button":3}`)
	f.Add(`{"uid":"u1","action":"impression","decision_id":"d~1"}`)
	codes := []string{"invalid_json", "invalid_uid", "invalid_action", "invalid_event_id", "invalid_decision_id", "invalid_button"}
	f.Fuzz(func(t *testing.T, body string) {
		b, perr := DecodeActionBody([]byte(body))
		if perr != nil {
			// An Error is a 400 (httpapi answers it so); its code is one the contract names.
			if !slices.Contains(codes, perr.Code) {
				t.Errorf("DecodeActionBody(%q): unknown code %q", body, perr.Code)
			}
			return
		}
		// Whatever is accepted is fit to queue: valid uid, a known action, valid ids.
		if !validID(b.UID) || (b.Action != "click" && b.Action != "close" && b.Action != "impression") ||
			(b.Action == "impression" && b.DecisionID == "") ||
			(b.EventID != "" && !validID(b.EventID)) || (b.DecisionID != "" && !validDecisionID(b.DecisionID)) ||
			(b.Button != 0 && b.Action != "click") {
			t.Errorf("DecodeActionBody(%q) accepted %+v", body, b)
		}
	})
}
