package redisstore

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/jsonx"
	"popupsvc/internal/popup"
	"popupsvc/internal/popupdoc"
)

// BenchmarkDecodeConfig compares the config blob's decode with encoding/json and with jsonx
// (which Load uses), for 1,000 popups: every instance decodes the whole blob on each
// announcement.
func BenchmarkDecodeConfig(b *testing.B) {
	popups := make([]popup.Popup, 1000)
	for i := range popups {
		rollout := 10 + i%90
		p, err := popup.Input{Name: "p" + strconv.Itoa(i),
			Creative: popup.Creative{Title: "Campaign " + strconv.Itoa(i), Content: "A popup with a realistic amount of text in it.",
				LinkURL: "https://example.com/c/" + strconv.Itoa(i),
				Buttons: []popup.Button{{Text: "Open", LinkURL: "https://example.com/o"}, {Text: "Later"}},
				Ext:     json.RawMessage(`{"theme":"dark"}`)},
			Targeting: &popup.TargetingInput{Platforms: []string{"ios"}, Regions: []string{"cn", "us"}, MinAppVersion: "8.1.0", RolloutPercent: &rollout}}.BuildWith(popup.LinkSchemes{})
		require.NoError(b, err)
		p.ID = int64(i + 1)
		popups[i] = p
	}
	blob, err := encodeConfig(popups)
	require.NoError(b, err)
	for _, dec := range []struct {
		name      string
		unmarshal func([]byte, any) error
	}{{"encoding-json", json.Unmarshal}, {"jsonx", jsonx.Unmarshal}} {
		b.Run(dec.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(blob)))
			for b.Loop() {
				var out []popupdoc.Entry
				if err := dec.unmarshal(blob, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
