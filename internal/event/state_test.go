package event

import (
	"reflect"
	"testing"
	"time"

	"popupsvc/internal/popup"
)

func TestFoldStates(t *testing.T) {
	t.Parallel()
	day1 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	next := day1.Add(time.Hour)
	tests := []struct {
		name string
		give []Event
		want []UserState
	}{
		{"an impression sets the last impression, its count and its day's count",
			[]Event{{UID: "u", PopupID: 1, Action: Impression, At: day1, NextShowAt: next, Impressions: 1, DayCount: 2}},
			[]UserState{{UID: "u", PopupID: 1, PopupState: popup.PopupState{NextShowAt: next, Impressions: 1, LastImpressionAt: day1},
				Day: popup.DayNumber(day1), DayCount: 2}}},
		{"a control's exposure advances the state as an impression would, without a day count",
			[]Event{{UID: "u", PopupID: 1, Action: Exposure, At: day1, NextShowAt: next, Impressions: 1, DayCount: 3}},
			[]UserState{{UID: "u", PopupID: 1, PopupState: popup.PopupState{NextShowAt: next, Impressions: 1, LastImpressionAt: day1}}}},
		{"a click and a close set their own times",
			[]Event{
				{UID: "u", PopupID: 1, Action: Click, At: day1, NextShowAt: next, Impressions: 1},
				{UID: "u", PopupID: 2, Action: Close, At: day1, NextShowAt: next, Impressions: 1},
			},
			[]UserState{
				{UID: "u", PopupID: 1, PopupState: popup.PopupState{NextShowAt: next, Impressions: 1, LastClickAt: day1}},
				{UID: "u", PopupID: 2, PopupState: popup.PopupState{NextShowAt: next, Impressions: 1, LastCloseAt: day1}},
			}},
		{"a holdout event leaves the state as it was",
			[]Event{{UID: "u", PopupID: popup.HoldoutPopupID, Action: Holdout, At: day1, NextShowAt: next, Impressions: 1}},
			[]UserState{}},
		{"the latest or largest of each field wins, in any order",
			[]Event{
				{UID: "u", PopupID: 1, Action: Impression, At: day2, NextShowAt: day2.Add(time.Hour), Impressions: 2, DayCount: 1},
				{UID: "u", PopupID: 1, Action: Impression, At: day1, NextShowAt: next, Impressions: 1, DayCount: 5},
				{UID: "u", PopupID: 1, Action: Click, At: day1.Add(time.Minute), NextShowAt: next, Impressions: 1},
			},
			[]UserState{{UID: "u", PopupID: 1, PopupState: popup.PopupState{NextShowAt: day2.Add(time.Hour), Impressions: 2,
				LastImpressionAt: day2, LastClickAt: day1.Add(time.Minute)}, Day: popup.DayNumber(day2), DayCount: 1}}},
		{"the same day keeps the larger count",
			[]Event{
				{UID: "u", PopupID: 1, Action: Impression, At: day1, Impressions: 1, DayCount: 3},
				{UID: "u", PopupID: 1, Action: Impression, At: day1.Add(time.Minute), Impressions: 2, DayCount: 2},
			},
			[]UserState{{UID: "u", PopupID: 1, PopupState: popup.PopupState{Impressions: 2, LastImpressionAt: day1.Add(time.Minute)},
				Day: popup.DayNumber(day1), DayCount: 3}}},
		{"rows come in primary key order: uid bytes, then popup id",
			[]Event{
				{UID: "b", PopupID: 1, Action: Close, At: day1},
				{UID: "a", PopupID: 2, Action: Close, At: day1},
				{UID: "B", PopupID: 9, Action: Close, At: day1},
				{UID: "a", PopupID: 1, Action: Close, At: day1},
			},
			[]UserState{
				{UID: "B", PopupID: 9, PopupState: popup.PopupState{LastCloseAt: day1}},
				{UID: "a", PopupID: 1, PopupState: popup.PopupState{LastCloseAt: day1}},
				{UID: "a", PopupID: 2, PopupState: popup.PopupState{LastCloseAt: day1}},
				{UID: "b", PopupID: 1, PopupState: popup.PopupState{LastCloseAt: day1}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := FoldStates(tt.give); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FoldStates:\n got  %+v\n want %+v", got, tt.want)
			}
		})
	}
}
