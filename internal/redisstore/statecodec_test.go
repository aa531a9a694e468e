package redisstore

import (
	"encoding/json"
	"testing"
	"time"

	jsoniter "github.com/json-iterator/go"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestStateCodecRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_790_000_000_123).UTC()
	tests := []struct {
		name string
		give popup.UserState
		want string
	}{
		{"no state", popup.UserState{}, "1|0|0"},
		{"one popup", popup.UserState{Day: 20717, DayCount: 2, Popups: popup.StatesOf(map[int64]popup.PopupState{
			7: {NextShowAt: at.Add(time.Hour), Impressions: 3, LastImpressionAt: at}})},
			"1|20717|2|7,1790003600123,3,1790000000123,0,0"},
		{"sorted by id, forever", popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{
			9: {NextShowAt: popup.Forever, LastClickAt: at}, 2: {LastCloseAt: at}})},
			"1|0|0|2,0,0,0,0,1790000000123|9,253402300799000,0,0,1790000000123,0"},
		{"the last shown time, in an entry of popup 0, first", popup.UserState{Day: 20717, DayCount: 1, LastShownAt: at,
			Popups: popup.StatesOf(map[int64]popup.PopupState{7: {NextShowAt: at.Add(time.Hour), Impressions: 1, LastImpressionAt: at}})},
			"1|20717|1|0,0,0,1790000000123,0,0|7,1790003600123,1,1790000000123,0,0"},
		{"the holdout mark, in the same entry", popup.UserState{Holdout: popup.HoldoutMark{Phase: 3, Day: 20717}},
			"1|0|0|0,20717,3,0,0,0"},
		{"the holdout mark and the last shown time", popup.UserState{Day: 20717, DayCount: 1, LastShownAt: at,
			Holdout: popup.HoldoutMark{Phase: 1, Day: 20717},
			Popups:  popup.StatesOf(map[int64]popup.PopupState{7: {NextShowAt: at.Add(time.Hour), Impressions: 1, LastImpressionAt: at}})},
			"1|20717|1|0,20717,1,1790000000123,0,0|7,1790003600123,1,1790000000123,0,0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := string(AppendState(nil, &tt.give))
			assert.Equal(t, tt.want, enc)
			got, err := DecodeState(enc)
			require.NoError(t, err)
			assert.Equal(t, tt.give, got)
		})
	}
}

// TestStateCodecKeepsStoredValues pins the stored format: every value below is what the previous
// release writes, and this one must write back exactly what it read (encode(decode(x)) == x), so
// old and new instances can share users' states during a rolling deploy.
func TestStateCodecKeepsStoredValues(t *testing.T) {
	t.Parallel()
	for _, give := range []string{
		"1|0|0",
		"1|20717|2|7,1790003600123,3,1790000000123,0,0",
		"1|0|0|2,0,0,0,0,1790000000123|9,253402300799000,0,0,1790000000123,0",
		"1|20717|1|0,0,0,1790000000123,0,0",
		"1|0|0|0,20717,3,0,0,0",
		"1|20717|1|0,20717,1,1790000000123,0,0|7,1790003600123,1,1790000000123,0,0",
		"1|20717|3|0,20716,2,1790000000123,0,0|1,1790003600123,1,1790000000123,0,0|" +
			"42,253402300799000,4,1789990000000,1789990000500,0|9223372036854775807,0,1,1790000000123,0,1790000000999",
	} {
		st, err := DecodeState(give)
		require.NoError(t, err, give)
		assert.Equal(t, give, string(AppendState(nil, &st)), "written back as read")
	}
}

// TestStateCodecReadsAnyOrder: a value with its popups out of order, or one twice, reads as a map
// of them did (sorted, the last of a repeated id wins) and is written back sorted.
func TestStateCodecReadsAnyOrder(t *testing.T) {
	t.Parallel()
	tests := []struct{ give, want string }{
		{"1|0|0|9,0,1,0,0,0|2,0,2,0,0,0|5,0,3,0,0,0", "1|0|0|2,0,2,0,0,0|5,0,3,0,0,0|9,0,1,0,0,0"},
		{"1|0|0|7,0,1,0,0,0|7,0,2,0,0,0", "1|0|0|7,0,2,0,0,0"},
		{"1|0|0|7,0,1,0,0,0|0,0,0,1790000000123,0,0", "1|0|0|0,0,0,1790000000123,0,0|7,0,1,0,0,0"},
	}
	for _, tt := range tests {
		st, err := DecodeState(tt.give)
		require.NoError(t, err, tt.give)
		assert.Equal(t, tt.want, string(AppendState(nil, &st)), tt.give)
	}
}

// TestDecodeStateAllocations: a user with popup entries costs one allocation (the entries), a
// user with none (or only the popup-0 entry) none.
func TestDecodeStateAllocations(t *testing.T) {
	tests := []struct {
		give string
		want float64
	}{
		{"1|0|0", 0},
		{"1|0|0|0,20717,3,0,0,0", 0},
		{"1|20717|2|7,1790003600123,3,1790000000123,0,0", 1},
		{"1|20717|1|0,20717,1,1790000000123,0,0|2,0,0,0,0,1790000000123|7,1790003600123,1,1790000000123,0,0|" +
			"9,253402300799000,0,0,1790000000123,0", 1},
	}
	for _, tt := range tests {
		st, err := DecodeState(tt.give)
		require.NoError(t, err)
		assert.Equal(t, st.Popups.Len(), cap(st.Popups), "sized to its entries: %s", tt.give)
		assert.Equal(t, tt.want, testing.AllocsPerRun(100, func() { _, _ = DecodeState(tt.give) }), tt.give)
	}
}

func TestStateCodecRejects(t *testing.T) {
	t.Parallel()
	for _, give := range []string{"", "2|0|0", "1|x|0", "1|0", "1|0|0|7,1,2", "1|0|0|7,a,0,0,0,0"} {
		_, err := DecodeState(give)
		assert.Error(t, err, give)
	}
}

func BenchmarkStateCodec(b *testing.B) {
	at := time.UnixMilli(1_790_000_000_123).UTC()
	s := popup.UserState{Day: 20717, DayCount: 2, Popups: popup.StatesOf(map[int64]popup.PopupState{
		7: {NextShowAt: at, Impressions: 3, LastImpressionAt: at}, 8: {NextShowAt: at, Impressions: 1, LastImpressionAt: at}})}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendState(buf[:0], &s)
		if _, err := DecodeState(string(buf)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateCodecs compares the compact text format with JSON (encoding/json and
// json-iterator) for one user's state, encode + decode, as issue 5 asks; the compact format is
// the one in use.
func BenchmarkStateCodecs(b *testing.B) {
	at := time.UnixMilli(1_790_000_000_123).UTC()
	s := popup.UserState{Day: 20717, DayCount: 2, Popups: popup.StatesOf(map[int64]popup.PopupState{
		7: {NextShowAt: at, Impressions: 3, LastImpressionAt: at},
		8: {NextShowAt: at, Impressions: 1, LastImpressionAt: at, LastClickAt: at},
		9: {NextShowAt: popup.Forever, Impressions: 1, LastImpressionAt: at, LastCloseAt: at}})}
	b.Run("compact", func(b *testing.B) {
		buf := make([]byte, 0, 256)
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendState(buf[:0], &s)
			if _, err := DecodeState(string(buf)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	codecs := []struct {
		name      string
		marshal   func(any) ([]byte, error)
		unmarshal func([]byte, any) error
	}{
		{"encoding-json", json.Marshal, json.Unmarshal},
		{"json-iterator", jsoniter.ConfigFastest.Marshal, jsoniter.ConfigFastest.Unmarshal},
	}
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			var n int
			b.ReportAllocs()
			for b.Loop() {
				raw, err := c.marshal(&s)
				if err != nil {
					b.Fatal(err)
				}
				var got popup.UserState
				if err := c.unmarshal(raw, &got); err != nil {
					b.Fatal(err)
				}
				n = len(raw)
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}
