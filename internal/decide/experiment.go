package decide

import (
	"context"
	"time"

	"popupsvc/internal/breaker"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// decideExperiment finishes a decision whose chosen popup x has a running experiment that
// assigned the user arm (docs/CONTRACT.md §10), from the user's state st as read:
//
//   - a variant: x's impression, counting for the arm, and the variant's content;
//   - the control: x's control exposure (the display rules advance as an impression's would, the
//     daily count does not) and no popup, or with fall_through the selection goes on after x
//     with the state as updated, and the next popup (its own experiment handled alike) is shown.
//
// Every event is recorded with the state in one Record. The decision id names x and arm. done is
// false on a conflict: the caller reads the state again and decides again.
func (d *Decider) decideExperiment(ctx, bctx context.Context, br *breaker.Breaker, snap *snapshot.Snapshot, cands []*popup.Compiled,
	req popup.Request, st *popup.StoredState, x *popup.Compiled, arm int, now time.Time) (ans Answer, done bool) {
	decision := d.ids.get().append(make([]byte, 0, maxDecisionIDLen+8))
	decision = appendArm(decision, x.Popup.ID, arm)
	evs := make([]event.Event, 0, 2) // a variant's impression or the control's exposure, and a fall-through's
	ans = Answer{Kind: None, Version: snap.Version}
	var shown *snapshot.Entry
	shownArm := -1
	rest := cands
	for c, i := x, arm; ; {
		e := c.Popup.Experiment
		if i < 0 || !e.IsControl(i) {
			ps := c.ApplyImpression(&st.UserState, now)
			ev := event.Event{UID: req.UID, PopupID: c.Popup.ID, Action: event.Impression, At: now,
				NextShowAt: ps.NextShowAt, Impressions: ps.Impressions, DayCount: st.UserState.ImpressionsOn(now)}
			shown, shownArm = snap.Entry(c.Popup.ID), i
			if i >= 0 {
				ev.Arms = shown.ArmRefs[i]
			}
			evs = append(evs, ev)
			break
		}
		ps := c.ApplyExposure(&st.UserState, now)
		evs = append(evs, event.Event{UID: req.UID, PopupID: c.Popup.ID, Action: event.Exposure, At: now,
			NextShowAt: ps.NextShowAt, Impressions: ps.Impressions, Arms: snap.Entry(c.Popup.ID).ArmRefs[i]})
		if e.Control.Mode != popup.ControlFallThrough || len(evs) == event.MaxRecordEvents {
			break
		}
		// As if c did not apply: the candidates after it (those before it did not qualify, and
		// an exposure changes nothing they depend on).
		rest = after(rest, c)
		if c = popup.Select(rest, req, &st.UserState, now, d.DailyCap); c == nil {
			break
		}
		if i = c.Arm(req.UID); i >= 0 && c.Popup.Experiment.IsControl(i) {
			// A control passed on the way is named in the decision id too, so that a click on
			// the popup the chain ends at counts for every control it passed (Act). A chain stops
			// where the id cannot name one more (docs/CONTRACT.md §10).
			next := appendArm(decision, c.Popup.ID, i)
			if len(next) > maxDecisionIDLen {
				break
			}
			decision = next
		}
	}
	id := string(decision)
	for k := range evs {
		ev := &evs[k]
		ev.DecisionID = id
		if ev.Action == event.Exposure {
			ev.ID = exposureID(id, k+1)
		} else {
			ev.ID = id
		}
	}
	if shown != nil {
		ans = Answer{Kind: Shown, Version: snap.Version, Popup: shown, DecisionID: id, Body: shown.Shown(shownArm)}
		if shownArm >= 0 {
			ans.Variant = shown.Popup.Experiment.ArmKey(shownArm)
		}
	}
	out, err := d.Users.Record(bctx, req.UID, st.Raw, &st.UserState, evs, false)
	if err != nil {
		return d.failed(ctx, br, now, opRecordImpression, err), true
	}
	br.Success()
	if out != popup.Recorded {
		return Answer{}, false
	}
	if ans.Kind == Shown {
		d.Metrics.count(outPopup)
	} else {
		d.Metrics.count(outControl)
	}
	return ans, true
}

// after is the part of cs after c (which cs holds).
func after(cs []*popup.Compiled, c *popup.Compiled) []*popup.Compiled {
	for i := range cs {
		if cs[i] == c {
			return cs[i+1:]
		}
	}
	return nil
}

// actionArms are the experiment arms a click or close a counts for (docs/CONTRACT.md §10): the
// user's arm in its popup's running experiment, and every control its decision id names that fell
// through on the way to this popup: that popup's experiment is running with mode fall_through and
// assigns this user to the control the suffix names. A suffix that says otherwise (forged, or from
// an older phase) is ignored. Nil for a popup outside any experiment; it then does not allocate.
func actionArms(snap *snapshot.Snapshot, entry *snapshot.Entry, a Action) []event.ArmRef {
	var arms []event.ArmRef
	if i := entry.Arm(a.UID); i >= 0 {
		arms = entry.ArmRefs[i][:1:1] // shared: appending below must copy it
	}
	armSuffixes(a.DecisionID, event.MaxArmRefs, func(x int64, i int) {
		if x == a.PopupID || len(arms) == event.MaxArmRefs {
			return
		}
		if xe := snap.Entry(x); xe != nil && xe.Arm(a.UID) == i {
			if e := xe.Popup.Experiment; e.IsControl(i) && e.Control.Mode == popup.ControlFallThrough {
				for _, r := range arms {
					if r.PopupID == x {
						return // named twice
					}
				}
				arms = append(arms, xe.ArmRefs[i]...)
			}
		}
	})
	return arms
}
