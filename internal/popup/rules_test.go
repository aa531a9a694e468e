package popup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/popup"
)

const (
	day  = 24 * time.Hour
	year = 365 * day
)

// rules sets a popup's display rules: reshow, click and close cooldowns in seconds, and max impressions.
func rules(reshow, click, closeCooldown int64, maxImpressions int) func(*popup.Input) {
	return func(in *popup.Input) {
		in.ReshowAfterSeconds = ptr(reshow)
		in.ClickCooldownSeconds = ptr(click)
		in.CloseCooldownSeconds = ptr(closeCooldown)
		in.MaxImpressions = ptr(maxImpressions)
	}
}

func TestEligible(t *testing.T) {
	t.Parallel()
	// Popup 1 hides for 1h after an impression, 7 days after a click, 2h after a close, and may be
	// seen 3 times. The user saw it at now, and state times are relative to that.
	const id = 1
	today := popup.DayNumber(now)
	tests := []struct {
		name     string
		rules    func(*popup.Input)
		state    popup.PopupState
		day      int32 // UserState.Day
		dayCount int
		dailyCap int
		at       time.Time
		want     popup.Reason
	}{
		{name: "no state", at: now, want: popup.ReasonNone},

		{name: "reshow: 1ns before next show", state: seen(now, now.Add(time.Hour)), at: now.Add(time.Hour - 1), want: popup.ReasonReshow},
		{name: "reshow: at next show", state: seen(now, now.Add(time.Hour)), at: now.Add(time.Hour), want: popup.ReasonNone},

		{name: "click cooldown: 1ns before it ends", state: clicked(now, now.Add(7*day)), at: now.Add(7*day - 1), want: popup.ReasonClickCooldown},
		{name: "click cooldown: when it ends", state: clicked(now, now.Add(7*day)), at: now.Add(7 * day), want: popup.ReasonNone},
		{name: "click never again, years later", rules: rules(3600, -1, 7200, 0), state: clicked(now, popup.Forever),
			at: now.Add(50 * year), want: popup.ReasonClickCooldown},
		{name: "click with no cooldown is explained by the impression", rules: rules(3600, 0, 7200, 0),
			state: popup.PopupState{NextShowAt: now.Add(time.Hour), Impressions: 1, LastImpressionAt: now, LastClickAt: now.Add(time.Minute)},
			at:    now.Add(30 * time.Minute), want: popup.ReasonReshow},
		{name: "expired click cooldown inside the reshow interval", rules: rules(3600, 60, 7200, 0),
			state: popup.PopupState{NextShowAt: now.Add(time.Hour), Impressions: 1, LastImpressionAt: now, LastClickAt: now},
			at:    now.Add(2 * time.Minute), want: popup.ReasonReshow},

		{name: "close cooldown: 1ns before it ends", state: closed(now, now.Add(2*time.Hour)), at: now.Add(2*time.Hour - 1), want: popup.ReasonCloseCooldown},
		{name: "close cooldown: when it ends", state: closed(now, now.Add(2*time.Hour)), at: now.Add(2 * time.Hour), want: popup.ReasonNone},
		{name: "close never again, years later", rules: rules(3600, 604800, -1, 0), state: closed(now, popup.Forever),
			at: now.Add(50 * year), want: popup.ReasonCloseCooldown},
		{name: "click explains before close",
			state: popup.PopupState{NextShowAt: now.Add(7 * day), LastClickAt: now, LastCloseAt: now},
			at:    now.Add(time.Hour), want: popup.ReasonClickCooldown},

		{name: "max impressions: one below", state: popup.PopupState{Impressions: 2}, at: now, want: popup.ReasonNone},
		{name: "max impressions: reached", state: popup.PopupState{Impressions: 3}, at: now, want: popup.ReasonMaxImpressions},
		{name: "max impressions 0 is unlimited", rules: rules(3600, 604800, 7200, 0), state: popup.PopupState{Impressions: 1000000},
			at: now, want: popup.ReasonNone},
		{name: "max impressions is reported before a cooldown", state: popup.PopupState{Impressions: 3, NextShowAt: popup.Forever, LastClickAt: now},
			at: now, want: popup.ReasonMaxImpressions},

		{name: "daily cap: one below", day: today, dayCount: 1, dailyCap: 2, at: now, want: popup.ReasonNone},
		{name: "daily cap: reached", day: today, dayCount: 2, dailyCap: 2, at: now, want: popup.ReasonDailyCap},
		{name: "daily cap: last instant of the UTC day", day: today, dayCount: 2, dailyCap: 2,
			at: time.Date(2026, 3, 10, 23, 59, 59, 999999999, time.UTC), want: popup.ReasonDailyCap},
		{name: "daily cap: resets at UTC midnight", day: today, dayCount: 2, dailyCap: 2,
			at: time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), want: popup.ReasonNone},
		{name: "daily cap: count from yesterday", day: today - 1, dayCount: 5, dailyCap: 2, at: now, want: popup.ReasonNone},
		{name: "daily cap 0 is unlimited", day: today, dayCount: 1000, dailyCap: 0, at: now, want: popup.ReasonNone},
		{name: "daily cap is reported before max impressions", state: popup.PopupState{Impressions: 3}, day: today, dayCount: 2, dailyCap: 2,
			at: now, want: popup.ReasonDailyCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, id, orDefault(tt.rules, rules(3600, 7*86400, 7200, 3)))
			s := &popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{id: tt.state}), Day: tt.day, DayCount: tt.dayCount}

			assert.Equal(t, tt.want, c.Eligible(s, tt.at, popup.Pacing{DailyCap: tt.dailyCap}))
		})
	}
}

func TestEligibleWithNilState(t *testing.T) {
	t.Parallel()
	c := compiled(t, 1, noChange)

	assert.Equal(t, popup.ReasonNone, c.Eligible(nil, now, popup.Pacing{DailyCap: 1}))
}

func TestImpressionsOn(t *testing.T) {
	t.Parallel()
	s := &popup.UserState{Day: popup.DayNumber(now), DayCount: 4}
	tests := []struct {
		name string
		give time.Time
		want int
	}{
		{name: "same UTC day", give: now, want: 4},
		{name: "first instant of the day", give: time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), want: 4},
		{name: "same day in UTC, next day locally", give: time.Date(2026, 3, 11, 7, 0, 0, 0, time.FixedZone("UTC+8", 8*3600)), want: 4},
		{name: "next UTC day", give: time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), want: 0},
		{name: "previous UTC day", give: time.Date(2026, 3, 9, 23, 59, 59, 0, time.UTC), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, s.ImpressionsOn(tt.give))
		})
	}
}

func TestDayNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give time.Time
		want int32
	}{
		{give: time.Unix(0, 0), want: 0},
		{give: time.Unix(86399, 999999999), want: 0},
		{give: time.Unix(86400, 0), want: 1},
		{give: time.Unix(-1, 0), want: -1},
		{give: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), want: 20522},
		{give: popup.Forever, want: 2932896},
	}
	for _, tt := range tests {
		t.Run(tt.give.UTC().String(), func(t *testing.T) {
			assert.Equal(t, tt.want, popup.DayNumber(tt.give))
		})
	}
}

// event is one user action replayed against a popup.
type event struct {
	apply func(*popup.Compiled, *popup.UserState, time.Time) popup.PopupState
	at    time.Time
}

var (
	impression = (*popup.Compiled).ApplyImpression
	click      = (*popup.Compiled).ApplyClick
	closeIt    = (*popup.Compiled).ApplyClose
)

func TestTransitionsOnlyExtendHiding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		rules  func(*popup.Input)
		events []event
		want   popup.PopupState
	}{
		{
			name:   "impression hides for the reshow interval",
			rules:  rules(3600, 0, 3600, 0),
			events: []event{{impression, now}},
			want:   popup.PopupState{NextShowAt: now.Add(time.Hour), Impressions: 1, LastImpressionAt: now},
		},
		{
			name:   "replayed older impression does not move next show back",
			rules:  rules(3600, 0, 3600, 0),
			events: []event{{impression, now.Add(time.Hour)}, {impression, now}},
			want:   popup.PopupState{NextShowAt: now.Add(2 * time.Hour), Impressions: 2, LastImpressionAt: now.Add(time.Hour)},
		},
		{
			name:   "short click cooldown after a long reshow keeps the longer",
			rules:  rules(86400, 3600, 86400, 0),
			events: []event{{impression, now}, {click, now.Add(time.Minute)}},
			want:   popup.PopupState{NextShowAt: now.Add(day), Impressions: 1, LastImpressionAt: now, LastClickAt: now.Add(time.Minute)},
		},
		{
			name:   "long click cooldown extends a short reshow",
			rules:  rules(3600, 7*86400, 3600, 0),
			events: []event{{impression, now}, {click, now.Add(time.Minute)}},
			want: popup.PopupState{NextShowAt: now.Add(7*day + time.Minute), Impressions: 1, LastImpressionAt: now,
				LastClickAt: now.Add(time.Minute)},
		},
		{
			name:   "click 0 hides no longer than the impression",
			rules:  rules(3600, 0, 3600, 0),
			events: []event{{impression, now}, {click, now.Add(time.Minute)}},
			want:   popup.PopupState{NextShowAt: now.Add(time.Hour), Impressions: 1, LastImpressionAt: now, LastClickAt: now.Add(time.Minute)},
		},
		{
			name:   "click never again survives later impressions",
			rules:  rules(3600, -1, 3600, 0),
			events: []event{{click, now}, {impression, now.Add(time.Hour)}},
			want:   popup.PopupState{NextShowAt: popup.Forever, Impressions: 1, LastImpressionAt: now.Add(time.Hour), LastClickAt: now},
		},
		{
			name:   "close hides for the close cooldown",
			rules:  rules(3600, 0, 7200, 0),
			events: []event{{impression, now}, {closeIt, now.Add(time.Minute)}},
			want: popup.PopupState{NextShowAt: now.Add(2*time.Hour + time.Minute), Impressions: 1, LastImpressionAt: now,
				LastCloseAt: now.Add(time.Minute)},
		},
		{
			name:   "close never again",
			rules:  rules(3600, 0, -1, 0),
			events: []event{{closeIt, now}},
			want:   popup.PopupState{NextShowAt: popup.Forever, LastCloseAt: now},
		},
		{
			name:   "replayed older click and close keep the latest times",
			rules:  rules(3600, 60, 60, 0),
			events: []event{{click, now.Add(time.Hour)}, {closeIt, now.Add(time.Hour)}, {click, now}, {closeIt, now}},
			want:   popup.PopupState{NextShowAt: now.Add(time.Hour + time.Minute), LastClickAt: now.Add(time.Hour), LastCloseAt: now.Add(time.Hour)},
		},
		{
			name:   "reshow 0 allows the next request at once",
			rules:  rules(0, 0, 0, 0),
			events: []event{{impression, now}},
			want:   popup.PopupState{NextShowAt: now, Impressions: 1, LastImpressionAt: now},
		},
		{
			name:   "the longest reshow stops at Forever instead of overflowing",
			rules:  rules(popup.MaxDurationSeconds, 0, 0, 0),
			events: []event{{impression, lateEvent}},
			want:   popup.PopupState{NextShowAt: popup.Forever, Impressions: 1, LastImpressionAt: lateEvent},
		},
		{
			name:   "event times are stored in UTC",
			rules:  rules(3600, 0, 3600, 0),
			events: []event{{impression, now.In(time.FixedZone("UTC+8", 8*3600))}},
			want:   popup.PopupState{NextShowAt: now.Add(time.Hour), Impressions: 1, LastImpressionAt: now},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, 1, tt.rules)
			var s popup.UserState
			var got popup.PopupState
			for _, e := range tt.events {
				got = e.apply(c, &s, e.at)
			}

			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want, s.Popups.Get(1))
		})
	}
}

func TestTransitionOrderDoesNotMatter(t *testing.T) {
	t.Parallel()
	// A queue may deliver events in any order; the state they leave must be the same.
	c := compiled(t, 1, rules(3600, 600, 7200, 0))
	events := []event{{impression, now}, {click, now.Add(time.Minute)}, {closeIt, now.Add(2 * time.Minute)}, {impression, now.Add(3 * time.Hour)}}
	want := popup.PopupState{
		NextShowAt: now.Add(4 * time.Hour), Impressions: 2,
		LastImpressionAt: now.Add(3 * time.Hour), LastClickAt: now.Add(time.Minute), LastCloseAt: now.Add(2 * time.Minute),
	}
	for _, order := range permutations(len(events)) {
		var s popup.UserState
		for _, i := range order {
			events[i].apply(c, &s, events[i].at)
		}
		assert.Equal(t, want, s.Popups.Get(1), "order %v", order)
	}
}

func TestApplyImpressionCountsTheUTCDay(t *testing.T) {
	t.Parallel()
	today := popup.DayNumber(now)
	tests := []struct {
		name                   string
		giveDay                int32
		giveCount              int
		at                     time.Time
		wantDay                int32
		wantCount, wantOnToday int
	}{
		{name: "first impression ever", giveDay: 0, giveCount: 0, at: now, wantDay: today, wantCount: 1, wantOnToday: 1},
		{name: "same day adds one", giveDay: today, giveCount: 2, at: now, wantDay: today, wantCount: 3, wantOnToday: 3},
		{name: "new day starts at one", giveDay: today - 1, giveCount: 7, at: now, wantDay: today, wantCount: 1, wantOnToday: 1},
		{name: "older day leaves the counter alone", giveDay: today, giveCount: 2, at: now.Add(-day), wantDay: today, wantCount: 2, wantOnToday: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, 1, noChange)
			s := popup.UserState{Day: tt.giveDay, DayCount: tt.giveCount}

			c.ApplyImpression(&s, tt.at)

			assert.Equal(t, tt.wantDay, s.Day)
			assert.Equal(t, tt.wantCount, s.DayCount)
			assert.Equal(t, tt.wantOnToday, s.ImpressionsOn(now))
		})
	}
}

func TestApplyKeepsOtherPopups(t *testing.T) {
	t.Parallel()
	a, b := compiled(t, 1, noChange), compiled(t, 2, noChange)
	var s popup.UserState

	a.ApplyImpression(&s, now)
	b.ApplyClick(&s, now)

	assert.Len(t, s.Popups, 2)
	assert.Equal(t, 1, s.Popups.Get(1).Impressions)
	assert.Equal(t, now, s.Popups.Get(2).LastClickAt)
}

func TestMergeState(t *testing.T) {
	t.Parallel()
	t1, t2 := now, now.Add(time.Hour)
	a := popup.PopupState{NextShowAt: t2, Impressions: 1, LastImpressionAt: t1, LastClickAt: t2}
	b := popup.PopupState{NextShowAt: t1, Impressions: 3, LastImpressionAt: t2, LastCloseAt: t1}
	want := popup.PopupState{NextShowAt: t2, Impressions: 3, LastImpressionAt: t2, LastClickAt: t2, LastCloseAt: t1}
	tests := []struct {
		name string
		a, b popup.PopupState
		want popup.PopupState
	}{
		{name: "field-wise max", a: a, b: b, want: want},
		{name: "commutative", a: b, b: a, want: want},
		{name: "idempotent", a: want, b: want, want: want},
		{name: "with zero state", a: a, b: popup.PopupState{}, want: a},
		{name: "Forever wins", a: a, b: popup.PopupState{NextShowAt: popup.Forever}, want: popup.PopupState{
			NextShowAt: popup.Forever, Impressions: 1, LastImpressionAt: t1, LastClickAt: t2,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, popup.MergeState(tt.a, tt.b))
		})
	}
}

func TestForeverFitsMySQLDatetime(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "9999-12-31 23:59:59", popup.Forever.Format(time.DateTime))
}

func seen(at, next time.Time) popup.PopupState {
	return popup.PopupState{NextShowAt: next, Impressions: 1, LastImpressionAt: at}
}

func clicked(at, next time.Time) popup.PopupState {
	return popup.PopupState{NextShowAt: next, Impressions: 1, LastImpressionAt: at, LastClickAt: at}
}

func closed(at, next time.Time) popup.PopupState {
	return popup.PopupState{NextShowAt: next, Impressions: 1, LastImpressionAt: at, LastCloseAt: at}
}

func orDefault(mod, def func(*popup.Input)) func(*popup.Input) {
	if mod == nil {
		return def
	}
	return mod
}

// permutations returns every ordering of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// lateEvent is close enough to Forever that adding the longest duration passes it.
var lateEvent = time.Date(9995, 1, 1, 0, 0, 0, 0, time.UTC)

func TestApplyExposureAdvancesTheRulesButNotTheDay(t *testing.T) {
	t.Parallel()
	today := popup.DayNumber(now)
	tests := []struct {
		name      string
		rules     func(*popup.Input)
		give      popup.UserState
		want      popup.PopupState
		wantDay   int32
		wantCount int
	}{
		{name: "first exposure: hidden for the reshow interval, counted, the day untouched", rules: rules(3600, 0, 0, 0),
			want: popup.PopupState{NextShowAt: now.Add(3600e9), Impressions: 1, LastImpressionAt: now}},
		{name: "the day's count stays", rules: rules(60, 0, 0, 3),
			give: popup.UserState{Day: today, DayCount: 2, Popups: popup.StatesOf(map[int64]popup.PopupState{1: {Impressions: 1}})},
			want: popup.PopupState{NextShowAt: now.Add(60e9), Impressions: 2, LastImpressionAt: now}, wantDay: today, wantCount: 2},
		{name: "a longer cooldown is kept", rules: rules(60, 0, -1, 0),
			give: popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: popup.Forever}})},
			want: popup.PopupState{NextShowAt: popup.Forever, Impressions: 1, LastImpressionAt: now}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compiled(t, 1, tt.rules)
			s := tt.give

			got := c.ApplyExposure(&s, now)

			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want, s.Popups.Get(1))
			assert.Equal(t, tt.wantDay, s.Day)
			assert.Equal(t, tt.wantCount, s.DayCount)
		})
	}
}
