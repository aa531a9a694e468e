package popup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/popup"
)

func TestPopupStatesSet(t *testing.T) {
	t.Parallel()
	a := popup.PopupState{Impressions: 1}
	b := popup.PopupState{Impressions: 2, NextShowAt: now}
	c := popup.PopupState{LastClickAt: now}
	tests := []struct {
		name    string
		give    popup.PopupStates
		id      int64
		ps      popup.PopupState
		wantIDs []int64
	}{
		{"into nothing", nil, 5, a, []int64{5}},
		{"first", popup.StatesOf(map[int64]popup.PopupState{5: b, 9: c}), 1, a, []int64{1, 5, 9}},
		{"between", popup.StatesOf(map[int64]popup.PopupState{1: b, 9: c}), 5, a, []int64{1, 5, 9}},
		{"last", popup.StatesOf(map[int64]popup.PopupState{1: b, 5: c}), 9, a, []int64{1, 5, 9}},
		{"overwrites", popup.StatesOf(map[int64]popup.PopupState{1: b, 5: c, 9: b}), 5, a, []int64{1, 5, 9}},
		{"popup 0", popup.StatesOf(map[int64]popup.PopupState{1: b}), 0, a, []int64{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[int64]popup.PopupState{}
			for _, e := range tt.give {
				before[e.ID] = e.PopupState
			}
			s := tt.give.Clone()
			s.Set(tt.id, tt.ps)
			var ids []int64
			for _, e := range s {
				ids = append(ids, e.ID)
			}
			assert.Equal(t, tt.wantIDs, ids, "one entry per id, in id order")
			assert.Equal(t, len(tt.wantIDs), s.Len())
			assert.Equal(t, tt.ps, s.Get(tt.id))
			for id, ps := range before {
				if id != tt.id {
					assert.Equal(t, ps, s.Get(id), "popup %d untouched", id)
				}
			}
		})
	}
}

func TestPopupStatesGet(t *testing.T) {
	t.Parallel()
	s := popup.StatesOf(map[int64]popup.PopupState{2: {Impressions: 2}, 4: {Impressions: 4}, 6: {Impressions: 6}})
	for _, tt := range []struct {
		id     int64
		want   int
		wantOK bool
	}{{1, 0, false}, {2, 2, true}, {3, 0, false}, {4, 4, true}, {6, 6, true}, {7, 0, false}} {
		ps, ok := s.Lookup(tt.id)
		assert.Equal(t, tt.wantOK, ok, "popup %d", tt.id)
		assert.Equal(t, tt.want, ps.Impressions, "popup %d", tt.id)
		assert.Equal(t, ps, s.Get(tt.id), "popup %d", tt.id)
	}
	var none popup.PopupStates
	assert.Zero(t, none.Get(2), "nothing held: the zero state")
	assert.Zero(t, none.Len())
}

func TestPopupStatesCloneIsIndependent(t *testing.T) {
	t.Parallel()
	orig := popup.StatesOf(map[int64]popup.PopupState{1: {Impressions: 1}, 9: {Impressions: 9}})
	orig = append(orig[:0:0], orig...) // no spare capacity either way
	cl := orig.Clone()
	cl.Set(1, popup.PopupState{Impressions: 100})
	cl.Set(5, popup.PopupState{LastCloseAt: now.Add(time.Hour)})
	assert.Equal(t, 1, orig.Get(1).Impressions, "an overwrite of the clone leaves the original")
	assert.Equal(t, 2, orig.Len(), "an insert into the clone leaves the original")
	assert.Equal(t, 3, cl.Len())

	orig = append(make(popup.PopupStates, 0, 8), orig...) // spare capacity a shared insert could use
	cl = orig.Clone()
	cl.Set(5, popup.PopupState{Impressions: 5})
	assert.Equal(t, []int64{1, 9}, []int64{orig[0].ID, orig[1].ID}, "the original's entries stay where they were")
	assert.Equal(t, 9, orig.Get(9).Impressions)
	assert.Nil(t, popup.PopupStates(nil).Clone())
}

func TestStatesOf(t *testing.T) {
	t.Parallel()
	assert.Nil(t, popup.StatesOf(nil))
	assert.Nil(t, popup.StatesOf(map[int64]popup.PopupState{}))
	s := popup.StatesOf(map[int64]popup.PopupState{30: {Impressions: 3}, 10: {Impressions: 1}, 20: {Impressions: 2}})
	assert.Equal(t, popup.PopupStates{{ID: 10, PopupState: popup.PopupState{Impressions: 1}},
		{ID: 20, PopupState: popup.PopupState{Impressions: 2}}, {ID: 30, PopupState: popup.PopupState{Impressions: 3}}}, s)
}
