package decide

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// The plan's tests need no store: the state goes in, the plan and the state to record come out.

var pt0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

const planSalt = "3f9a0c2b7d1e4a65"

// planID is the fresh id every test plan is given: the decision ids below start with it.
var planID = freshID{prefix: [16]byte([]byte("0123456789abcdef")), n: 35}

const planIDText = "0123456789abcdef-z" // 35 in base 36

func planPopup(id int64, priority int, e *popup.Experiment) popup.Popup {
	return popup.Popup{ID: id, Name: "p" + strconv.FormatInt(id, 10), Status: popup.StatusActive, Priority: priority,
		Targeting: popup.Targeting{RolloutPercent: 100}, ReshowAfterSeconds: 3600, CloseCooldownSeconds: 3600, Experiment: e,
		Creative: popup.Creative{
			Title: "hi",
		},
	}
}

// planExperiment is a running experiment: variants a (50) and b (30), a control (20) of mode.
func planExperiment(mode popup.ControlMode) *popup.Experiment {
	return &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: planSalt,
		Variants: []popup.Variant{
			{Key: "a", Weight: 50, Creative: popup.Creative{Title: "variant a"}},
			{Key: "b", Weight: 30, Creative: popup.Creative{Title: "variant b"}},
		},
		Control: &popup.Control{Weight: 20, Mode: mode}}
}

const planControl = 2 // planExperiment's arms: a, b, control

// planUID is the first uid "user-N" that every salt of planSalt's experiments puts in arm.
func planUID(arm int) string {
	a := popup.NewAssigner(planExperiment(popup.ControlNone))
	for i := 0; ; i++ {
		if uid := "user-" + strconv.Itoa(i); a.Assign(uid) == arm {
			return uid
		}
	}
}

// planned is the part of an event a plan decides (the uid and time are the request's).
type planned struct {
	Action     event.Action
	PopupID    int64
	ID         string
	Arm        string // the arm the event counts for; "" for none
	DayCount   int
	NextShowAt time.Time
}

func plannedOf(evs []event.Event) []planned {
	var out []planned
	for _, ev := range evs {
		p := planned{Action: ev.Action, PopupID: ev.PopupID, ID: ev.ID, DayCount: ev.DayCount, NextShowAt: ev.NextShowAt}
		for _, a := range ev.Arms {
			p.Arm += a.Arm
		}
		out = append(out, p)
	}
	return out
}

func TestPlan(t *testing.T) {
	t.Parallel()
	hour := pt0.Add(time.Hour)
	none, fall := planExperiment(popup.ControlNone), planExperiment(popup.ControlFallThrough)
	control := planUID(planControl)
	controls := func(n int) []popup.Popup { // n controls falling through, then a plain popup
		ps := []popup.Popup{planPopup(9, 1, nil)}
		for id := 1; id <= n; id++ {
			ps = append(ps, planPopup(int64(id), 100-id, fall))
		}
		return ps
	}
	tests := []struct {
		name     string
		popups   []popup.Popup
		state    popup.UserState
		dailyCap int
		uid      string

		wantShown    int64 // 0: none
		wantArm      int
		wantVariant  string
		wantDecision string
		wantEvents   []planned
	}{
		{
			name:    "nothing eligible: nothing recorded",
			popups:  []popup.Popup{planPopup(1, 10, nil)},
			state:   popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: hour, Impressions: 1}})},
			uid:     "u1",
			wantArm: -1,
		},
		{
			name:     "the daily cap reached: nothing recorded",
			popups:   []popup.Popup{planPopup(1, 10, nil)},
			state:    popup.UserState{Day: popup.DayNumber(pt0), DayCount: 2},
			dailyCap: 2,
			uid:      "u1",
			wantArm:  -1,
		},
		{
			name:      "a plain popup: its impression, named by the fresh id",
			popups:    []popup.Popup{planPopup(1, 10, nil)},
			uid:       "u1",
			wantShown: 1, wantArm: -1, wantDecision: planIDText,
			wantEvents: []planned{{Action: event.Impression, PopupID: 1, ID: planIDText, DayCount: 1, NextShowAt: hour}},
		},
		{
			name:      "a hidden popup: the next one",
			popups:    []popup.Popup{planPopup(1, 10, nil), planPopup(2, 5, nil)},
			state:     popup.UserState{Day: popup.DayNumber(pt0), DayCount: 1, Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: hour, Impressions: 1}})},
			uid:       "u1",
			wantShown: 2, wantArm: -1, wantDecision: planIDText,
			wantEvents: []planned{{Action: event.Impression, PopupID: 2, ID: planIDText, DayCount: 2, NextShowAt: hour}},
		},
		{
			name:      "a variant: its impression counts for the arm",
			popups:    []popup.Popup{planPopup(1, 10, none)},
			uid:       planUID(1),
			wantShown: 1, wantArm: 1, wantVariant: "b", wantDecision: planIDText + "~1.1",
			wantEvents: []planned{{Action: event.Impression, PopupID: 1, ID: planIDText + "~1.1", Arm: "b", DayCount: 1, NextShowAt: hour}},
		},
		{
			name:    "a control that shows nothing: its exposure only",
			popups:  []popup.Popup{planPopup(1, 10, none), planPopup(2, 5, nil)},
			uid:     control,
			wantArm: -1, wantDecision: planIDText + "~1.2",
			wantEvents: []planned{{Action: event.Exposure, PopupID: 1, ID: planIDText + "~1.2.x1", Arm: "control", NextShowAt: hour}},
		},
		{
			name:      "a control falling through: its exposure and the next popup's impression",
			popups:    []popup.Popup{planPopup(1, 10, fall), planPopup(2, 5, nil)},
			uid:       control,
			wantShown: 2, wantArm: -1, wantDecision: planIDText + "~1.2",
			wantEvents: []planned{
				{Action: event.Exposure, PopupID: 1, ID: planIDText + "~1.2.x1", Arm: "control", NextShowAt: hour},
				{Action: event.Impression, PopupID: 2, ID: planIDText + "~1.2", DayCount: 1, NextShowAt: hour},
			},
		},
		{
			name:    "a control falling through to nothing: its exposure only",
			popups:  []popup.Popup{planPopup(1, 10, fall)},
			uid:     control,
			wantArm: -1, wantDecision: planIDText + "~1.2",
			wantEvents: []planned{{Action: event.Exposure, PopupID: 1, ID: planIDText + "~1.2.x1", Arm: "control", NextShowAt: hour}},
		},
		{
			name:      "two controls falling through: both named in the decision id",
			popups:    controls(2),
			uid:       control,
			wantShown: 9, wantArm: -1, wantDecision: planIDText + "~1.2~2.2",
			wantEvents: []planned{
				{Action: event.Exposure, PopupID: 1, ID: planIDText + "~1.2~2.2.x1", Arm: "control", NextShowAt: hour},
				{Action: event.Exposure, PopupID: 2, ID: planIDText + "~1.2~2.2.x2", Arm: "control", NextShowAt: hour},
				{Action: event.Impression, PopupID: 9, ID: planIDText + "~1.2~2.2", DayCount: 1, NextShowAt: hour},
			},
		},
		{
			name:    "five controls: the chain stops at four exposures",
			popups:  controls(5),
			uid:     control,
			wantArm: -1, wantDecision: planIDText + "~1.2~2.2~3.2~4.2",
			wantEvents: []planned{
				{Action: event.Exposure, PopupID: 1, ID: planIDText + "~1.2~2.2~3.2~4.2.x1", Arm: "control", NextShowAt: hour},
				{Action: event.Exposure, PopupID: 2, ID: planIDText + "~1.2~2.2~3.2~4.2.x2", Arm: "control", NextShowAt: hour},
				{Action: event.Exposure, PopupID: 3, ID: planIDText + "~1.2~2.2~3.2~4.2.x3", Arm: "control", NextShowAt: hour},
				{Action: event.Exposure, PopupID: 4, ID: planIDText + "~1.2~2.2~3.2~4.2.x4", Arm: "control", NextShowAt: hour},
			},
		},
		{
			name:    "ids too long to name a second control: the chain stops before it",
			popups:  []popup.Popup{planPopup(1e18+1, 99, fall), planPopup(1e18+2, 98, fall), planPopup(9, 1, nil)},
			uid:     control,
			wantArm: -1, wantDecision: planIDText + "~1000000000000000001.2",
			wantEvents: []planned{{Action: event.Exposure, PopupID: 1e18 + 1, ID: planIDText + "~1000000000000000001.2.x1",
				Arm: "control", NextShowAt: hour}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapshot.BuildWith(7, tt.popups, pt0, popup.LinkSchemes{}, nil)
			snap.Pacing = popup.Pacing{DailyCap: tt.dailyCap}
			require.Empty(t, snap.Problems)
			req := popup.Request{UID: tt.uid, Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: "en"}
			st := tt.state

			p := plan(&planInput{Snap: snap, Cands: snap.Candidates(&req), Req: req, State: &st, Now: pt0,
				ID: planID})

			var shown int64
			if p.Shown != nil {
				shown = p.Shown.Popup.ID
			}
			assert.Equal(t, tt.wantShown, shown, "shown")
			assert.Equal(t, tt.wantArm, p.Arm, "arm")
			assert.Equal(t, tt.wantDecision, p.DecisionID, "decision id")
			assert.Equal(t, tt.wantEvents, plannedOf(p.Events))
			for _, ev := range p.Events {
				assert.Equal(t, tt.uid, ev.UID)
				assert.Equal(t, pt0, ev.At)
				assert.Equal(t, p.DecisionID, ev.DecisionID)
				assert.Equal(t, ev.NextShowAt, st.Popups.Get(ev.PopupID).NextShowAt, "the state to record holds popup %d's event", ev.PopupID)
			}
			ans := p.answer(7)
			assert.Equal(t, tt.wantVariant, ans.Variant)
			assert.Equal(t, p.Shown, ans.Popup)
		})
	}
}

// TestPlanAnswers: a recorded plan answers with the content shown and the decision's id, counted
// as a popup or as a control's exposure.
func TestPlanAnswers(t *testing.T) {
	t.Parallel()
	snap := snapshot.BuildWith(7, []popup.Popup{planPopup(1, 10, planExperiment(popup.ControlNone)), planPopup(2, 5, nil)}, pt0, popup.LinkSchemes{}, nil)
	require.Empty(t, snap.Problems)
	variant, plain := snap.Entry(1), snap.Entry(2)
	tests := []struct {
		name        string
		give        decisionPlan
		want        Answer
		wantOutcome outcome
	}{
		{
			name:        "a plain popup: its own content",
			give:        decisionPlan{Shown: plain, Arm: -1, DecisionID: "d-1", Body: plain.JSON, Locale: "default", Events: make([]event.Event, 1)},
			want:        Answer{Kind: Shown, Version: 7, Popup: plain, DecisionID: "d-1", Body: plain.JSON, Locale: "default"},
			wantOutcome: outPopup,
		},
		{
			name:        "a variant: the variant's content and key",
			give:        decisionPlan{Shown: variant, Arm: 0, DecisionID: "d-1~1.0", Body: variant.Variants[0], Locale: "default", Events: make([]event.Event, 1)},
			want:        Answer{Kind: Shown, Version: 7, Popup: variant, DecisionID: "d-1~1.0", Body: variant.Variants[0], Variant: "a", Locale: "default"},
			wantOutcome: outPopup,
		},
		{
			name:        "a control's exposure: no popup",
			give:        decisionPlan{Arm: -1, DecisionID: "d-1~1.2", Events: make([]event.Event, 1)},
			want:        Answer{Kind: None, Version: 7},
			wantOutcome: outControl,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.give.answer(7))
			assert.Equal(t, tt.wantOutcome, tt.give.outcome())
		})
	}
}

// TestPlanRecordsTheLocaleShown: the impression carries the locale the answer names (the results
// per locale count it); a control's exposure, which shows nothing, carries none.
func TestPlanRecordsTheLocaleShown(t *testing.T) {
	t.Parallel()
	translated := planPopup(2, 5, nil)
	translated.Translations = []popup.Translation{{Locale: "pt", Title: "oi"}, {Locale: "pt-BR", Title: "olá"}}
	tests := []struct {
		name       string
		lang       string
		uid        string
		wantLocale []string // per planned event
	}{
		{name: "the exact tag", lang: "pt-BR", uid: "user-1", wantLocale: []string{"pt-BR"}},
		{name: "the tag without its region", lang: "pt-PT", uid: "user-1", wantLocale: []string{"pt"}},
		{name: "no translation for lang: the default", lang: "de", uid: "user-1", wantLocale: []string{"default"}},
		{name: "a control falling through: no locale on the exposure", lang: "pt-BR", uid: planUID(planControl),
			wantLocale: []string{"", "pt-BR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			popups := []popup.Popup{translated}
			if tt.uid == planUID(planControl) {
				popups = append(popups, planPopup(1, 10, planExperiment(popup.ControlFallThrough)))
			}
			snap := snapshot.BuildWith(7, popups, pt0, popup.LinkSchemes{}, nil)
			require.Empty(t, snap.Problems)
			req := popup.Request{UID: tt.uid, Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: tt.lang}
			var st popup.UserState

			p := plan(&planInput{Snap: snap, Cands: snap.Candidates(&req), Req: req, State: &st, Now: pt0, ID: planID})

			var got []string
			for _, ev := range p.Events {
				got = append(got, ev.Locale)
			}
			assert.Equal(t, tt.wantLocale, got)
			assert.Equal(t, p.Events[len(p.Events)-1].Locale, p.answer(7).Locale, "the impression's locale is the answer's")
		})
	}
}

// BenchmarkPlanHoldout is the plan of a decision that shows nothing (the popup is within its
// reshow interval), without a holdout, with a running 10% holdout for a user outside it (the
// membership test is the difference), and for a user held out and counted today (the test and a
// second selection, without the holdout). No store: the plan alone (docs/PERFORMANCE.md, "Global
// holdout").
func BenchmarkPlanHoldout(b *testing.B) {
	h := popup.Holdout{Percent: 10, Salt: "h01d0u7a5a17c0de", Phase: 1, StartedAt: pt0.Add(-time.Hour)}
	check := h.Check()
	uid := func(held bool) string {
		for i := 0; ; i++ {
			if u := "user-" + strconv.Itoa(i); check.Holds(u) == held {
				return u
			}
		}
	}
	for _, bc := range []struct {
		name string
		hold popup.Holdout
		uid  string
	}{
		{"no holdout", popup.Holdout{}, uid(false)},
		{"user outside", h, uid(false)},
		{"user held out", h, uid(true)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			snap := snapshot.BuildWith(7, []popup.Popup{planPopup(1, 10, nil)}, pt0, popup.LinkSchemes{}, nil)
			snap.SetHoldout(bc.hold)
			req := popup.Request{UID: bc.uid, Platform: popup.PlatformIOS, AppVersion: popup.Version{8, 10}, Region: "us", Lang: "en"}
			cands := snap.Candidates(&req)
			st := popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: pt0.Add(time.Hour), Impressions: 1, LastImpressionAt: pt0}}),
				Holdout: popup.HoldoutMark{Phase: 1, Day: popup.DayNumber(pt0)}}
			in := planInput{Snap: snap, Cands: cands, Req: req, State: &st, Now: pt0.Add(time.Minute), ID: planID}
			if p := plan(&in); len(p.Events) != 0 {
				b.Fatalf("want nothing planned, got %d events", len(p.Events))
			}
			b.ReportAllocs()
			for b.Loop() {
				plan(&in)
			}
		})
	}
}
