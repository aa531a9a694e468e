package event

import (
	"cmp"
	"slices"
	"strings"

	"popupsvc/internal/popup"
)

// UserState is what a batch of events says about one user's state of one popup: the events
// folded with the domain's merge rule (popup.MergeState), every field the latest or largest seen,
// and the daily cap's count of the latest day an impression carried one.
type UserState struct {
	UID     string
	PopupID int64
	popup.PopupState
	Day      int32 // UTC day number (popup.DayNumber) of the latest impression carrying a day count; 0 = none
	DayCount int   // the user's impressions of every popup that day, as of it
}

// StateOf is what one event says about its popup's state: the next-show instant and the
// impression count it carries, and its own time as the last time of its action. A control's
// exposure advances the state as an impression would (docs/CONTRACT.md §10): the user was
// shown nothing, but the arm is counted as if they had been, so that the arms stay comparable.
// A holdout event says nothing (§15): the holdout kept the popup from the user.
func StateOf(e *Event) (popup.PopupState, bool) {
	st := popup.PopupState{NextShowAt: e.NextShowAt, Impressions: e.Impressions}
	switch e.Action {
	case Impression, Exposure:
		st.LastImpressionAt = e.At
	case Click:
		st.LastClickAt = e.At
	case Close:
		st.LastCloseAt = e.At
	case Holdout:
		return popup.PopupState{}, false
	}
	return st, true
}

// mergeDay keeps the later day's count, or the larger count of the same day. Only impressions
// carry a day count (an exposure is not an impression for the daily cap).
func (s *UserState) mergeDay(e *Event) {
	if e.Action != Impression || e.DayCount <= 0 {
		return
	}
	day := popup.DayNumber(e.At)
	switch {
	case day > s.Day:
		s.Day, s.DayCount = day, e.DayCount
	case day == s.Day:
		s.DayCount = max(s.DayCount, e.DayCount)
	}
}

// FoldStates folds events into one state per (uid, popup_id), sorted by uid (byte order) then
// popup id: the order of the state table's primary key, so that a writer takes its row locks in
// one order. Events that say nothing about a state (StateOf) are left out.
func FoldStates(events []Event) []UserState {
	type key struct {
		uid     string
		popupID int64
	}
	idx := make(map[key]int, len(events))
	rows := make([]UserState, 0, len(events))
	for i := range events {
		e := &events[i]
		st, ok := StateOf(e)
		if !ok {
			continue
		}
		k := key{e.UID, e.PopupID}
		j, seen := idx[k]
		if !seen {
			j = len(rows)
			idx[k] = j
			rows = append(rows, UserState{UID: e.UID, PopupID: e.PopupID})
		}
		r := &rows[j]
		r.PopupState = popup.MergeState(r.PopupState, st)
		r.mergeDay(e)
	}
	slices.SortFunc(rows, func(a, b UserState) int {
		return cmp.Or(strings.Compare(a.UID, b.UID), cmp.Compare(a.PopupID, b.PopupID))
	})
	return rows
}
