package popup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/popup"
)

func TestPacing(t *testing.T) {
	t.Parallel()
	req := popup.Request{UID: "u1", Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}}
	plain := compiled(t, 1, noChange)
	exempt := compiled(t, 2, func(in *popup.Input) { in.ExemptFromCaps = true })
	tomorrow := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC) // the end of now's UTC day
	shownAt := func(at time.Time, count int) *popup.UserState {
		return &popup.UserState{LastShownAt: at, Day: popup.DayNumber(now), DayCount: count}
	}
	tests := []struct {
		name       string
		cs         []*popup.Compiled
		pace       popup.Pacing
		state      *popup.UserState
		wantReason popup.Reason // of cs[0]
		wantNext   time.Time    // NextEligibleAt over cs
	}{
		{name: "no pacing", cs: []*popup.Compiled{plain}, state: shownAt(now.Add(-time.Second), 5), wantNext: now},
		{name: "within the gap", cs: []*popup.Compiled{plain}, pace: popup.Pacing{MinGap: time.Minute},
			state: shownAt(now.Add(-10*time.Second), 1), wantReason: popup.ReasonMinGap, wantNext: now.Add(50 * time.Second)},
		{name: "the gap's end: shown", cs: []*popup.Compiled{plain}, pace: popup.Pacing{MinGap: time.Minute},
			state: shownAt(now.Add(-time.Minute), 1), wantNext: now},
		{name: "never shown: no gap", cs: []*popup.Compiled{plain}, pace: popup.Pacing{MinGap: time.Minute}, wantNext: now},
		{name: "the cap before the gap, until the day's end", cs: []*popup.Compiled{plain}, pace: popup.Pacing{MinGap: time.Minute, DailyCap: 2},
			state: shownAt(now.Add(-10*time.Second), 2), wantReason: popup.ReasonDailyCap, wantNext: tomorrow},
		{name: "a gap past the day's end outlasts the cap", cs: []*popup.Compiled{plain}, pace: popup.Pacing{MinGap: 24 * time.Hour, DailyCap: 2},
			state: shownAt(now, 2), wantReason: popup.ReasonDailyCap, wantNext: now.Add(24 * time.Hour)},
		{name: "exempt: neither applies", cs: []*popup.Compiled{exempt, plain}, pace: popup.Pacing{MinGap: time.Hour, DailyCap: 1},
			state: shownAt(now, 1), wantNext: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantReason, tt.cs[0].Eligible(tt.state, now, tt.pace))
			assert.Equal(t, tt.wantNext, popup.NextEligibleAt(tt.cs, req, tt.state, now, tt.pace))
			chosen := popup.Select(tt.cs, req, tt.state, now, tt.pace)
			if tt.wantReason == popup.ReasonNone {
				assert.Same(t, tt.cs[0], chosen)
			} else {
				assert.Nil(t, chosen)
			}
		})
	}
}

func TestImpressionSetsTheLastShownTimeAndAnExposureDoesNot(t *testing.T) {
	t.Parallel()
	c := compiled(t, 1, noChange)
	var s popup.UserState
	c.ApplyExposure(&s, now)
	assert.True(t, s.LastShownAt.IsZero(), "a control exposure shows nothing")
	c.ApplyImpression(&s, now.Add(time.Minute))
	assert.Equal(t, now.Add(time.Minute), s.LastShownAt)
	c.ApplyImpression(&s, now) // a replayed, older impression
	assert.Equal(t, now.Add(time.Minute), s.LastShownAt, "only moves forward")
}

func TestValidatePacing(t *testing.T) {
	t.Parallel()
	assert.Empty(t, popup.ValidatePacing(0, 0))
	assert.Empty(t, popup.ValidatePacing(popup.MaxMinGapSeconds, popup.MaxDailyCap))
	assert.Equal(t, []popup.FieldError{
		{Field: "min_gap_seconds", Message: "must be between 0 (no gap) and 604800 (a week)"},
		{Field: "daily_cap", Message: "must be between 0 (no cap) and 1000"},
	}, popup.ValidatePacing(-1, 1001))
}
