package report_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/report"
)

func TestDayBounds(t *testing.T) {
	t.Parallel()
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	date := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name     string
		from, to string
		loc      *time.Location
		want     []string // UTC instants
	}{
		{"one UTC day", "2026-12-01", "2026-12-01", time.UTC, []string{"2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"}},
		{"Los Angeles in winter", "2026-12-01", "2026-12-02", load("America/Los_Angeles"),
			[]string{"2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z", "2026-12-03T08:00:00Z"}},
		{"Kathmandu, +05:45", "2026-12-01", "2026-12-01", load("Asia/Kathmandu"), []string{"2026-11-30T18:15:00Z", "2026-12-01T18:15:00Z"}},
		{"spring forward: a 23-hour day", "2026-03-08", "2026-03-08", load("America/Los_Angeles"),
			[]string{"2026-03-08T08:00:00Z", "2026-03-09T07:00:00Z"}},
		{"fall back: a 25-hour day", "2026-11-01", "2026-11-01", load("America/Los_Angeles"),
			[]string{"2026-11-01T07:00:00Z", "2026-11-02T08:00:00Z"}},
		{"across a year end", "2026-12-31", "2027-01-01", time.UTC,
			[]string{"2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z", "2027-01-02T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := report.DayBounds(date(tt.from), date(tt.to), tt.loc)
			var s []string
			for _, b := range got {
				s = append(s, b.UTC().Format(time.RFC3339))
			}
			assert.Equal(t, tt.want, s)
		})
	}
}

func TestUnspecifiedClicks(t *testing.T) {
	t.Parallel()
	d := report.DayCount{Clicks: 10, Buttons: map[int]int64{0: 3, 2: 4}}
	assert.Equal(t, int64(3), d.Unspecified())
}
