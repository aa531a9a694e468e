package decide_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
)

// TestMinGapAcrossTwoPopups: after popup 1 is shown, popup 2 (eligible all along) waits for the
// team's min gap; the wait is answered locally, and at its end popup 2 shows.
func TestMinGapAcrossTwoPopups(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, popup.Pacing{MinGap: 10 * time.Minute},
		active(1, nil), active(2, func(p *popup.Popup) { p.Priority = 5 }))
	tests := []struct {
		at       time.Duration
		wantKind decide.Kind
		wantID   int64
		wantRead bool
	}{
		{at: 0, wantKind: decide.Shown, wantID: 1, wantRead: true},
		{at: time.Minute, wantKind: decide.None, wantRead: true},      // the gap: remembered until its end
		{at: 9 * time.Minute, wantKind: decide.None, wantRead: false}, // the local answer
		{at: 10 * time.Minute, wantKind: decide.Shown, wantID: 2, wantRead: true},
	}
	for _, tt := range tests {
		kind, id, read := f.decide(t, iosReq, t0.Add(tt.at))
		assert.Equal(t, tt.wantKind, kind, "+%v", tt.at)
		assert.Equal(t, tt.wantID, id, "+%v", tt.at)
		assert.Equal(t, tt.wantRead, read, "+%v store read", tt.at)
	}
}

// TestExemptPopupPassesThePacing: a popup exempt from caps shows inside the gap and past the daily
// cap, and its impression starts a gap for the others like any popup's.
func TestExemptPopupPassesThePacing(t *testing.T) {
	t.Parallel()
	notice := func(p *popup.Popup) { p.ExemptFromCaps, p.Priority = true, 1 }
	f := newFixture(t, 1000, popup.Pacing{MinGap: time.Hour, DailyCap: 1}, active(1, nil), active(2, notice))

	kind, id, _ := f.decide(t, iosReq, t0)
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(1), id)
	kind, id, _ = f.decide(t, iosReq, t0.Add(time.Minute))
	assert.Equal(t, decide.Shown, kind, "the notice passes the gap and the cap")
	assert.Equal(t, int64(2), id)
}

// TestLocalAnswersAcrossAPacingChange: a shorter gap is a new config version, so a remembered
// "nothing until the gap's end" is not used under it.
func TestLocalAnswersAcrossAPacingChange(t *testing.T) {
	t.Parallel()
	p1, p2 := active(1, nil), active(2, func(p *popup.Popup) { p.Priority = 5 })
	f := newFixture(t, 1000, popup.Pacing{MinGap: time.Hour}, p1, p2)
	kind, _, _ := f.decide(t, iosReq, t0)
	assert.Equal(t, decide.Shown, kind)
	kind, _, _ = f.decide(t, iosReq, t0.Add(time.Minute))
	assert.Equal(t, decide.None, kind, "within the hour's gap, remembered")

	f.pace = popup.Pacing{MinGap: 2 * time.Minute}
	f.publish(t, 2, p1, p2)

	kind, id, read := f.decide(t, iosReq, t0.Add(3*time.Minute))
	assert.True(t, read, "the new version does not use the old answer")
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(2), id)
}

// TestExplainNamesThePacing: the preview says min_gap and daily_cap, and an exempt popup is chosen.
func TestExplainNamesThePacing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, popup.Pacing{MinGap: time.Hour, DailyCap: 2},
		active(1, nil), active(2, func(p *popup.Popup) { p.Priority = 5 }),
		active(3, func(p *popup.Popup) { p.Priority, p.ExemptFromCaps = 1, true }))
	kind, _, _ := f.decide(t, iosReq, t0)
	assert.Equal(t, decide.Shown, kind)

	ex, err := f.d.Explain(t.Context(), iosReq, t0.Add(time.Minute), decide.ExplainOptions{})
	assert.NoError(t, err)
	assert.Equal(t, []popup.Reason{popup.ReasonMinGap, popup.ReasonMinGap, popup.ReasonNone}, reasons(ex.Candidates))

	kind, _, _ = f.decide(t, iosReq, t0.Add(2*time.Hour))
	assert.Equal(t, decide.Shown, kind)
	ex, err = f.d.Explain(t.Context(), iosReq, t0.Add(4*time.Hour), decide.ExplainOptions{})
	assert.NoError(t, err)
	assert.Equal(t, []popup.Reason{popup.ReasonDailyCap, popup.ReasonDailyCap, popup.ReasonNone}, reasons(ex.Candidates))
}
