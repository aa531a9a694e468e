package jsonx

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// The standard library only, no testify: FuzzUnmarshalMatchesEncodingJSON is fuzzed by every make
// test, and go test -fuzz compiles everything this package's tests import again with coverage
// instrumentation: testify's tree, net/http included, is costly (docs/RELIABILITY.md, "Hostile
// input: fuzzing").

// shape has the field kinds of the bodies decoded on the busy paths.
type shape struct {
	S string  `json:"s"`
	T string  `json:"t,omitempty"`
	I int64   `json:"i"`
	N int     `json:"n"`
	F float64 `json:"f"`
	B bool    `json:"b"`
}

func TestUnmarshalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
	}{
		{"object", `{"s":"a","i":1,"n":-2,"f":1.5,"b":true}`},
		{"unknown fields ignored", `{"s":"a","x":{"y":[1,2]}}`},
		{"case-insensitive names", `{"S":"a","I":3}`},
		{"duplicate keys: last wins", `{"s":"a","s":"b"}`},
		{"null", `null`},
		{"escapes", `{"s":"\u00e9\n\"\\"}`},
		{"raw control character in a key", "{\"\x00\":1,\"s\":\"a\"}"},
		{"raw control character in a string", "{\"s\":\"a\x1ab\"}"},
		{"raw tab in a string", "{\"s\":\"a\tb\"}"},
		{"trailing data", `{"s":"a"} x`},
		{"two values", `{} {}`},
		{"truncated", `{"s":`},
		{"array", `[1]`},
		{"string for int", `{"i":"1"}`},
		{"float for int", `{"i":1.5}`},
		{"int overflow", `{"n":99999999999999999999}`},
		{"single quotes", `{'s':'a'}`},
		{"empty", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got shape
			werr := json.Unmarshal([]byte(tt.give), &want)
			gerr := Unmarshal([]byte(tt.give), &got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("encoding/json: %v, jsonx: %v", werr, gerr)
			}
			if werr == nil { // after an error the callers drop the value
				if got != want {
					t.Errorf("jsonx: %+v, encoding/json: %+v", got, want)
				}
			}
		})
	}
}

func FuzzUnmarshalMatchesEncodingJSON(f *testing.F) {
	f.Add(`{"s":"u1","t":"click","i":1}`)
	f.Add("{\"\x00\":\"\"}")
	f.Add(`{"S":"x","s":"y"} `)
	f.Fuzz(func(t *testing.T, body string) {
		var want, got shape
		werr := json.Unmarshal([]byte(body), &want)
		gerr := Unmarshal([]byte(body), &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json: %v, jsonx: %v", body, werr, gerr)
		}
		if werr == nil && utf8.ValidString(got.S+got.T) {
			if got != want {
				t.Errorf("%q: jsonx: %+v, encoding/json: %+v", body, got, want)
			}
		}
	})
}

// The A/B of the decision: go test -run '^$' -bench Unmarshal -count 6 ./internal/jsonx/
func BenchmarkUnmarshal(b *testing.B) {
	bodies := map[string]string{
		"action": `{"uid":"user-123456","action":"click","event_id":"0b8f3c2e-1f2a-4c5d-9e8f-001122334455","decision_id":"d-9f8e7d6c5b4a"}`,
		"event":  `{"v":1,"id":"d-9f8e7d6c5b4a3210","u":"user-123456","p":17,"a":"impression","t":1700000000000,"n":1700003600000,"i":3}`,
	}
	type action struct {
		UID        string `json:"uid"`
		Action     string `json:"action"`
		EventID    string `json:"event_id"`
		DecisionID string `json:"decision_id"`
	}
	type event struct {
		V  int    `json:"v"`
		ID string `json:"id"`
		U  string `json:"u"`
		P  int64  `json:"p"`
		A  string `json:"a"`
		T  int64  `json:"t"`
		D  string `json:"d,omitempty"`
		N  int64  `json:"n"`
		I  int    `json:"i"`
	}
	for _, name := range []string{"action", "event"} {
		raw := []byte(bodies[name])
		for lib, un := range map[string]func([]byte, any) error{"encoding-json": json.Unmarshal, "jsonx": Unmarshal} {
			b.Run(name+"/"+lib, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var v any = &action{}
					if name == "event" {
						v = &event{}
					}
					if err := un(raw, v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
