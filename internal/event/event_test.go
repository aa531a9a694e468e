package event

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// The standard library only, no testify: FuzzDecode is fuzzed by every make test, and go test
// -fuzz compiles everything this package's tests import again with coverage instrumentation:
// testify's tree, net/http included, is costly (docs/RELIABILITY.md, "Hostile input: fuzzing").

func TestAppendDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.UTC)
	tests := []struct {
		name string
		give Event
	}{
		{"impression", Event{ID: "d1", UID: "u-1", PopupID: 7, Action: Impression, At: at, NextShowAt: at.Add(time.Hour), Impressions: 3}},
		{"impression with the day's count", Event{ID: "d2", UID: "u-1", PopupID: 7, Action: Impression, At: at, NextShowAt: at.Add(time.Hour), Impressions: 1, DayCount: 4}},
		{"impression in a translation", Event{ID: "d5", UID: "u", PopupID: 7, Action: Impression, At: at, NextShowAt: at, Impressions: 1, Locale: "pt-BR"}},
		{"impression in the default content", Event{ID: "d6", UID: "u", PopupID: 7, Action: Impression, At: at, NextShowAt: at, Impressions: 1, Locale: "default"}},
		{"click with decision", Event{ID: "e:1", UID: "u.2", PopupID: 1, Action: Click, At: at, DecisionID: "d1", NextShowAt: at}},
		{"close never shown again", Event{ID: "e2", UID: "u", PopupID: 9, Action: Close, At: at, NextShowAt: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}},
		{"click on the first button", Event{ID: "e3", UID: "u", PopupID: 1, Action: Click, At: at, Button: ButtonAt(0)}},
		{"click on the last button", Event{ID: "e4", UID: "u", PopupID: 1, Action: Click, At: at, Button: ButtonAt(MaxButton)}},
		{"odd characters escaped", Event{ID: "e\"\\\n\u00e9", UID: "u", PopupID: 2, Action: Click, At: at}},
		{"impression of a variant", Event{ID: "d3", UID: "u", PopupID: 4, Action: Impression, At: at, NextShowAt: at, Impressions: 1,
			Arms: []ArmRef{{PopupID: 4, Salt: "5eed5eed5eed5eed", Arm: "b"}}}},
		{"control exposure", Event{ID: "d4~c", UID: "u", PopupID: 4, Action: Exposure, At: at, NextShowAt: at, Impressions: 1,
			Arms: []ArmRef{{PopupID: 4, Salt: "5eed5eed5eed5eed", Arm: "control"}}}},
		{"click counting for two experiments", Event{ID: "e5", UID: "u", PopupID: 5, Action: Click, At: at,
			Arms: []ArmRef{{PopupID: 5, Salt: "s1", Arm: "a"}, {PopupID: 4, Salt: "s2", Arm: "control"}}}},
		{"conversion", Event{ID: "o-1", UID: "u", Action: Conversion, At: at, Goal: "purchase"}},
		{"conversion with a value", Event{ID: "o-2", UID: "u", Action: Conversion, At: at, Goal: "purchase", Value: 19.99}},
		{"refund", Event{ID: "o-3", UID: "u", Action: Conversion, At: at, Goal: "purchase", Value: -1e12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Append(nil, &tt.give)
			if !json.Valid(b) {
				t.Errorf("not valid JSON: %s", b)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			if !reflect.DeepEqual(got, tt.give) {
				t.Errorf("Decode(%s) = %+v, want %+v", b, got, tt.give)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
	}{
		{"not json", `{"v":1,`},
		{"raw control character (encoding/json refuses it, json-iterator alone would not)", "{\"v\":1,\"id\":\"e\x01\",\"u\":\"u\",\"p\":1,\"a\":\"click\",\"t\":1,\"n\":0,\"i\":0}"},
		{"wrong version", `{"v":2,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0}`},
		{"no id", `{"v":1,"u":"u","p":1,"a":"click","t":1,"n":0,"i":0}`},
		{"no uid", `{"v":1,"id":"e","p":1,"a":"click","t":1,"n":0,"i":0}`},
		{"bad popup", `{"v":1,"id":"e","u":"u","p":0,"a":"click","t":1,"n":0,"i":0}`},
		{"bad action", `{"v":1,"id":"e","u":"u","p":1,"a":"like","t":1,"n":0,"i":0}`},
		{"no time", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":0,"n":0,"i":0}`},
		{"negative count", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":-1}`},
		{"negative day count", `{"v":1,"id":"e","u":"u","p":1,"a":"impression","t":1,"n":0,"i":1,"c":-1}`},
		{"button below 0", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"b":-2}`},
		{"button too large", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"b":255}`},
		{"button on a close", `{"v":1,"id":"e","u":"u","p":1,"a":"close","t":1,"n":0,"i":0,"b":0}`},
		{"button not a number", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"b":"0"}`},
		{"locale on a click", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"l":"en"}`},
		{"locale not a tag", `{"v":1,"id":"e","u":"u","p":1,"a":"impression","t":1,"n":0,"i":1,"l":"english"}`},
		{"locale not in canonical case", `{"v":1,"id":"e","u":"u","p":1,"a":"impression","t":1,"n":0,"i":1,"l":"pt-br"}`},
		{"exposure without an arm", `{"v":1,"id":"e","u":"u","p":1,"a":"exposure","t":1,"n":0,"i":1}`},
		{"five arms", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"x":[{"p":1,"s":"s","a":"a"},{"p":2,"s":"s","a":"a"},{"p":3,"s":"s","a":"a"},{"p":4,"s":"s","a":"a"},{"p":5,"s":"s","a":"a"}]}`},
		{"arm without a salt", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"x":[{"p":1,"s":"","a":"a"}]}`},
		{"arm key too long", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"x":[{"p":1,"s":"s","a":"aaaaaaaaaaaaaaaaa"}]}`},
		{"arm of popup 0", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"x":[{"p":0,"s":"s","a":"a"}]}`},
		{"conversion of a popup", `{"v":1,"id":"e","u":"u","p":1,"a":"conversion","t":1,"n":0,"i":0,"g":"purchase"}`},
		{"conversion without a goal", `{"v":1,"id":"e","u":"u","p":0,"a":"conversion","t":1,"n":0,"i":0}`},
		{"conversion of a bad goal", `{"v":1,"id":"e","u":"u","p":0,"a":"conversion","t":1,"n":0,"i":0,"g":"Purchase"}`},
		{"conversion with an arm", `{"v":1,"id":"e","u":"u","p":0,"a":"conversion","t":1,"n":0,"i":0,"g":"p","x":[{"p":1,"s":"s","a":"a"}]}`},
		{"conversion worth too much", `{"v":1,"id":"e","u":"u","p":0,"a":"conversion","t":1,"n":0,"i":0,"g":"p","w":2e12}`},
		{"click with a goal", `{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0,"g":"p"}`},
		{"id too long", `{"v":1,"id":"` + string(make([]byte, 0)) + `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","u":"u","p":1,"a":"click","t":1,"n":0,"i":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.give))
			if !errors.Is(err, ErrDecode) {
				t.Errorf("Decode(%q): %v, want ErrDecode", tt.give, err)
			}
		})
	}
}

// An event queued by a build that did not know buttons decodes as an unspecified click.
func TestDecodeBeforeButtons(t *testing.T) {
	t.Parallel()
	e, err := Decode([]byte(`{"v":1,"id":"e","u":"u","p":1,"a":"click","t":1,"n":0,"i":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Button.Index(); ok || e.Button != 0 {
		t.Errorf("Button = %d, want unspecified", e.Button)
	}
}

func FuzzDecode(f *testing.F) {
	at := time.UnixMilli(1_700_000_000_000).UTC()
	f.Add(Append(nil, &Event{ID: "e", UID: "u", PopupID: 1, Action: Click, At: at}))
	f.Add([]byte(`{"v":1}`))
	f.Add(Append(nil, &Event{ID: "e", UID: "u", PopupID: 1, Action: Click, At: at, Button: ButtonAt(3)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes must survive a round trip unchanged.
		again, err := Decode(Append(nil, &e))
		if err != nil {
			t.Fatalf("%q decodes, its re-encoding does not: %v", b, err)
		}
		if !reflect.DeepEqual(again, e) {
			t.Errorf("%q: decoded %+v, after a round trip %+v", b, e, again)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	e := Event{ID: "0123456789abcdef01234567", UID: "user-123456", PopupID: 42, Action: Impression,
		At: time.UnixMilli(1_700_000_000_000), NextShowAt: time.UnixMilli(1_700_086_400_000), Impressions: 2}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], &e)
	}
}

func BenchmarkAppendClickButton(b *testing.B) {
	e := Event{ID: "0123456789abcdef01234567", UID: "user-123456", PopupID: 42, Action: Click,
		At: time.UnixMilli(1_700_000_000_000), NextShowAt: time.UnixMilli(1_700_086_400_000), Impressions: 2, Button: ButtonAt(1)}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], &e)
	}
}

func BenchmarkDecode(b *testing.B) {
	e := Event{ID: "0123456789abcdef01234567", UID: "user-123456", PopupID: 42, Action: Impression,
		At: time.UnixMilli(1_700_000_000_000), NextShowAt: time.UnixMilli(1_700_086_400_000), Impressions: 2}
	raw := Append(nil, &e)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendImpression is the queue encoding of a decision's impression without a locale
// (as before locales were carried) and with one: what carrying the locale adds to the hot path
// (docs/PERFORMANCE.md, "The impression's locale").
func BenchmarkAppendImpression(b *testing.B) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.UTC)
	for _, locale := range []string{"", "default", "pt-BR"} {
		e := Event{ID: "0123456789abcdef000023", UID: "user-1234567", PopupID: 42, Action: Impression, At: at,
			DecisionID: "0123456789abcdef000023", NextShowAt: at.Add(24 * time.Hour), Impressions: 3, DayCount: 2, Locale: locale}
		b.Run("locale="+locale, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf = Append(buf[:0], &e)
			}
			b.ReportMetric(float64(len(buf)), "bytes/event")
		})
	}
}
