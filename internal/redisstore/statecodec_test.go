package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestStateCodecRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_790_000_000_123).UTC()
	tests := []struct {
		name string
		give popup.UserState
		want string
	}{
		{"no state", popup.UserState{}, "1|0|0"},
		{"one popup", popup.UserState{Day: 20717, DayCount: 2, Popups: map[int64]popup.PopupState{
			7: {NextShowAt: at.Add(time.Hour), Impressions: 3, LastImpressionAt: at}}},
			"1|20717|2|7,1790003600123,3,1790000000123,0,0"},
		{"sorted by id, forever", popup.UserState{Popups: map[int64]popup.PopupState{
			9: {NextShowAt: popup.Forever, LastClickAt: at}, 2: {LastCloseAt: at}}},
			"1|0|0|2,0,0,0,0,1790000000123|9,253402300799000,0,0,1790000000123,0"},
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

func TestStateCodecRejects(t *testing.T) {
	for _, give := range []string{"", "2|0|0", "1|x|0", "1|0", "1|0|0|7,1,2", "1|0|0|7,a,0,0,0,0"} {
		_, err := DecodeState(give)
		assert.Error(t, err, give)
	}
}

func BenchmarkStateCodec(b *testing.B) {
	at := time.UnixMilli(1_790_000_000_123).UTC()
	s := popup.UserState{Day: 20717, DayCount: 2, Popups: map[int64]popup.PopupState{
		7: {NextShowAt: at, Impressions: 3, LastImpressionAt: at}, 8: {NextShowAt: at, Impressions: 1, LastImpressionAt: at}}}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendState(buf[:0], &s)
		if _, err := DecodeState(string(buf)); err != nil {
			b.Fatal(err)
		}
	}
}
