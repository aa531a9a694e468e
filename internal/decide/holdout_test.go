package decide_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// holdout20 is a running 20% holdout (docs/CONTRACT.md §15).
var holdout20 = popup.Holdout{Percent: 20, Salt: "h01d0u7a5a17c0de", Phase: 3, StartedAt: t0.Add(-24 * time.Hour)}

// holdoutUID is a uid the holdout h holds out (held) or not.
func holdoutUID(t testing.TB, h popup.Holdout, held bool) string {
	t.Helper()
	c := h.Check()
	for i := range 1000 {
		if uid := "user-" + strconv.Itoa(i); c.Holds(uid) == held {
			return uid
		}
	}
	t.Fatal("no such uid among 1000")
	return ""
}

// notice is a popup exempt from the holdout, below the others, shown again after two days.
func notice(id int64) popup.Popup {
	return active(id, func(p *popup.Popup) { p.HoldoutExempt, p.Priority, p.ReshowAfterSeconds = true, 1, 2*86400 })
}

// recorded is what f's store recorded since mark: each event's action, popup and arm refs.
type recordedEvent struct {
	Action  event.Action
	PopupID int64
	Arms    []event.ArmRef
}

func (f *fixture) recordedSince(mark int) []recordedEvent {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	var out []recordedEvent
	for _, e := range f.store.events[mark:] {
		out = append(out, recordedEvent{Action: e.Action, PopupID: e.PopupID, Arms: e.Arms})
	}
	return out
}

func (f *fixture) recordedCount() int {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	return len(f.store.events)
}

// TestHoldoutDecisions: a user held out is shown only the exempt notice, and the popup it would
// have seen is recorded as a holdout event first, once a UTC day; another user's impression of a
// popup that is not exempt carries the others' group, once a UTC day too.
func TestHoldoutDecisions(t *testing.T) {
	t.Parallel()
	key := holdout20.PhaseKey()
	heldRef := []event.ArmRef{{PopupID: 0, Salt: key, Arm: "holdout"}}
	othersRef := []event.ArmRef{{PopupID: 0, Salt: key, Arm: "others"}}
	heldUID, otherUID := holdoutUID(t, holdout20, true), holdoutUID(t, holdout20, false)
	tests := []struct {
		name       string
		uid        string
		at         time.Duration
		wantKind   decide.Kind
		wantID     int64
		wantEvents []recordedEvent
	}{
		{"held out: the notice, after the would-be popup's holdout event", heldUID, 0, decide.Shown, 2,
			[]recordedEvent{{event.Holdout, 1, heldRef}, {event.Impression, 2, nil}}},
		{"held out, later that day: nothing, nothing recorded", heldUID, 2 * time.Hour, decide.None, 0, nil},
		{"held out, the next day: a holdout event again", heldUID, 24 * time.Hour, decide.None, 0,
			[]recordedEvent{{event.Holdout, 1, heldRef}}},
		{"others: the popup, its impression counting the user", otherUID, 0, decide.Shown, 1,
			[]recordedEvent{{event.Impression, 1, othersRef}}},
		{"others, after the reshow that day: counted once already", otherUID, 2 * time.Hour, decide.Shown, 1,
			[]recordedEvent{{event.Impression, 1, nil}}},
		{"others, the next day: counted again", otherUID, 24 * time.Hour, decide.Shown, 1,
			[]recordedEvent{{event.Impression, 1, othersRef}}},
	}
	f := newFixture(t, 0, popup.Pacing{}, active(1, nil), notice(2))
	f.hold = holdout20
	f.publish(t, 2, active(1, nil), notice(2))
	for _, tt := range tests {
		req := iosReq
		req.UID = tt.uid
		mark := f.recordedCount()
		kind, id, _ := f.decide(t, req, t0.Add(tt.at))
		assert.Equal(t, tt.wantKind, kind, tt.name)
		assert.Equal(t, tt.wantID, id, tt.name)
		assert.Equal(t, tt.wantEvents, f.recordedSince(mark), tt.name)
	}
}

// TestHoldoutExemptWouldBePopupRecordsNothing: when the popup a held-out user would see is exempt
// anyway, the user is shown it and no holdout event is recorded: the holdout changed nothing.
func TestHoldoutExemptWouldBePopupRecordsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, popup.Pacing{}, notice(2))
	f.hold = holdout20
	f.publish(t, 2, notice(2))
	req := iosReq
	req.UID = holdoutUID(t, holdout20, true)
	kind, id, _ := f.decide(t, req, t0)
	assert.Equal(t, decide.Shown, kind)
	assert.Equal(t, int64(2), id)
	assert.Equal(t, []recordedEvent{{event.Impression, 2, nil}}, f.recordedSince(0))
}

// TestHoldoutLocalAnswers: after a held-out user's holdout event of the day, "nothing" is
// remembered until the next UTC day (no Redis read), when the next holdout event is due; a user
// outside the holdout keeps the local answers of any user.
func TestHoldoutLocalAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1000, popup.Pacing{}, active(1, nil))
	f.hold = holdout20
	f.publish(t, 2, active(1, nil))
	held, other := iosReq, iosReq
	held.UID, other.UID = holdoutUID(t, holdout20, true), holdoutUID(t, holdout20, false)
	tomorrow := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		req      popup.Request
		at       time.Time
		wantRead bool
		wantRec  int // events recorded
	}{
		{"held out: the holdout event", held, t0, true, 1},
		{"held out: the first nothing is a full decision", held, t0.Add(time.Minute), true, 0},
		{"held out: remembered", held, t0.Add(5 * time.Hour), false, 0},
		{"held out: the next day's event", held, tomorrow, true, 1},
		{"others: shown", other, t0, true, 1},
		{"others: the first nothing is a full decision", other, t0.Add(time.Minute), true, 0},
		{"others: remembered until the reshow", other, t0.Add(30 * time.Minute), false, 0},
	}
	for _, tt := range tests {
		mark := f.recordedCount()
		_, _, read := f.decide(t, tt.req, tt.at)
		assert.Equal(t, tt.wantRead, read, tt.name)
		assert.Len(t, f.recordedSince(mark), tt.wantRec, tt.name)
	}
}

// TestHoldoutAcrossPhases: a new phase is a new config version; a user counted today in the old
// phase is counted again in the new one the same day.
func TestHoldoutAcrossPhases(t *testing.T) {
	t.Parallel()
	next, _, changed := holdout20.Change(25, t0.Add(time.Hour))
	require.True(t, changed)
	require.Equal(t, holdout20.Salt, next.Salt, "a new phase keeps the salt")
	f := newFixture(t, 0, popup.Pacing{}, active(1, func(p *popup.Popup) { p.ReshowAfterSeconds = 60 }))
	f.hold = holdout20
	f.publish(t, 2, active(1, func(p *popup.Popup) { p.ReshowAfterSeconds = 60 }))
	req := iosReq
	req.UID = holdoutUID(t, next, false) // outside the larger holdout, so outside both
	f.decide(t, req, t0)
	f.hold = next
	f.publish(t, 3, active(1, func(p *popup.Popup) { p.ReshowAfterSeconds = 60 }))
	mark := f.recordedCount()
	kind, _, _ := f.decide(t, req, t0.Add(2*time.Hour))
	require.Equal(t, decide.Shown, kind)
	assert.Equal(t, []recordedEvent{{event.Impression, 1, []event.ArmRef{{PopupID: 0, Salt: next.PhaseKey(), Arm: "others"}}}},
		f.recordedSince(mark))
}

// TestExplainNamesTheHoldout: the preview of a held-out user says which popups the holdout keeps
// from them, and shows the exempt one.
func TestExplainNamesTheHoldout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, popup.Pacing{}, active(1, nil), notice(2))
	f.hold = holdout20
	f.publish(t, 2, active(1, nil), notice(2))
	req := iosReq
	req.UID = holdoutUID(t, holdout20, true)
	ex, err := f.d.Explain(t.Context(), req, t0, decide.ExplainOptions{})
	require.NoError(t, err)
	assert.Equal(t, []popup.Reason{popup.ReasonHoldout, popup.ReasonNone}, reasons(ex.Candidates))
	assert.Equal(t, int64(2), ex.ShownID)
}

// BenchmarkDecideHoldout is a decision that reads the state and finds nothing to show (local
// answers off, the in-memory store standing in for Redis): without a holdout, with a running 10%
// holdout for a user outside it, and for a user held out who was counted today. The difference
// with the first is what the holdout costs a decision (docs/PERFORMANCE.md, "Global holdout").
func BenchmarkDecideHoldout(b *testing.B) {
	h := popup.Holdout{Percent: 10, Salt: "h01d0u7a5a17c0de", Phase: 1, StartedAt: t0.Add(-time.Hour)}
	for _, bc := range []struct {
		name string
		hold popup.Holdout
		uid  string
	}{
		{"no holdout", popup.Holdout{}, holdoutUID(b, h, false)},
		{"user outside", h, holdoutUID(b, h, false)},
		{"user held out", h, holdoutUID(b, h, true)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := snapshot.BuildWith(1, []popup.Popup{active(1, nil), hidden}, t0, popup.LinkSchemes{}, nil)
			s.SetHoldout(bc.hold)
			holder := &snapshot.Holder{}
			holder.Store(s)
			store := newMemStore()
			st := withHidden(popup.UserState{Popups: popup.StatesOf(map[int64]popup.PopupState{1: {NextShowAt: t0.Add(time.Hour), Impressions: 1}})})
			st.Holdout = popup.HoldoutMark{Phase: 1, Day: popup.DayNumber(t0)}
			store.set(bc.uid, st)
			d := &decide.Decider{Snapshots: holder, Users: store, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second,
				Metrics: decide.NewMetrics(nil)}
			ctx := context.Background()
			req := iosReq
			req.UID = bc.uid
			now := t0.Add(time.Minute)
			if a := d.Decide(ctx, req, now); a.Kind != decide.None {
				b.Fatalf("want nothing, got %v", a.Kind)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Decide(ctx, req, now)
			}
		})
	}
}

// TestHoldoutLeavesOutControlsThatShowNothing (issue 49): a user whose experiment puts them in a
// control that shows nothing is counted in neither holdout group (the others are "shown a
// popup"): no others' group rides on the control exposure, and a held-out user in the same arm
// records no holdout event. A falling-through control's user is shown the next popup and counts.
func TestHoldoutLeavesOutControlsThatShowNothing(t *testing.T) {
	t.Parallel()
	key := holdout20.PhaseKey()
	for _, mode := range []popup.ControlMode{popup.ControlNone, popup.ControlFallThrough} {
		e := experiment(mode)
		ctrl := popup.NewAssigner(e)
		uid := func(held bool) string {
			c := holdout20.Check()
			for i := range 10_000 {
				if u := "user-" + strconv.Itoa(i); c.Holds(u) == held && ctrl.Assign(u) == controlArm {
					return u
				}
			}
			t.Fatal("no such uid")
			return ""
		}
		f := newFixture(t, 0, popup.Pacing{}, active(1, withExp(e)), active(3, func(p *popup.Popup) { p.Priority = 0 }))
		f.hold = holdout20
		f.publish(t, 2, active(1, withExp(e)), active(3, func(p *popup.Popup) { p.Priority = 0 }))
		groups := func(evs []recordedEvent) []string {
			var out []string
			for _, ev := range evs {
				for _, a := range ev.Arms {
					if a.PopupID == 0 && a.Salt == key {
						out = append(out, a.Arm)
					}
				}
			}
			return out
		}
		for _, held := range []bool{false, true} {
			req := iosReq
			req.UID = uid(held)
			mark := f.recordedCount()
			f.decide(t, req, t0)
			got := groups(f.recordedSince(mark))
			switch {
			case mode == popup.ControlNone:
				assert.Empty(t, got, "mode %s, held %v: in neither group", mode, held)
			case held:
				assert.Equal(t, []string{"holdout"}, got, "fall-through, held out: counted")
			default:
				assert.Equal(t, []string{"others"}, got, "fall-through: shown the next popup, counted")
			}
		}
	}
}
