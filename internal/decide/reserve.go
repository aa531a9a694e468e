package decide

import (
	"context"
	"errors"
	"time"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// Reservations park the decisions of Reserve until the client confirms them
// (redisstore.UserStore implements it). Their outcomes are popup.Outcome's: Recorded, Busy,
// Conflict for Reserve; Recorded, Duplicate, Expired, Conflict for the confirmations.
type Reservations interface {
	// Reserve parks next and evs as uid's reservation of decisionID (showing popupID) for ttl,
	// when uid has no pending reservation and its state still equals prev.
	Reserve(ctx context.Context, uid, prev string, next *popup.UserState, decisionID string, popupID int64, evs []event.Event, ttl time.Duration) (popup.Outcome, error)
	// Confirm applies the reservation as planned, while the state is still the one it was
	// planned on.
	Confirm(ctx context.Context, uid, decisionID string, popupID int64) (popup.Outcome, error)
	// Reservation reads the pending reservation: its planned state and events; false if none.
	Reservation(ctx context.Context, uid, decisionID string, popupID int64) (popup.UserState, []event.Event, bool, error)
	// ConfirmOn applies the reservation as re-planned on the state prev.
	ConfirmOn(ctx context.Context, uid, decisionID string, popupID int64, prev string, next *popup.UserState, evs []event.Event) (popup.Outcome, error)
}

// ReservationTTL is how long a decision of Reserve waits for its confirmation
// (docs/CONTRACT.md §2, "Impressions when shown"): long enough for a slow page to render the
// popup and post the impression, short enough that a popup never shown (the client dropped the
// answer) holds the user's other popups back only briefly.
const ReservationTTL = 30 * time.Second

// ErrExpired: the confirmation names no pending reservation (it expired, or never was).
var ErrExpired = errors.New("no pending reservation of this decision")

// Reserve answers the homepage like Decide, but a popup it shows is not yet an impression: the
// decision is reserved for the user for ReservationTTL and applied (state, caps, pacing, stats,
// experiment exposures) only by Confirm. While a reservation is pending the user's next Reserve
// shows nothing, so two concurrent calls never show two popups; one never confirmed expires and
// leaves no trace. A decision that shows nothing (a control's exposure, a holdout event) is
// recorded at once, as Decide records it: there is nothing to confirm.
// It needs d.Reservations.
func (d *Decider) Reserve(ctx context.Context, req popup.Request, now time.Time) Answer {
	return d.decide(ctx, req, now, true)
}

// Confirm applies uid's reservation of decisionID, the impression of popupID the client has
// shown. It returns nil when the reservation is applied, now or by an earlier call (a retry is
// applied once); ErrExpired when no pending reservation names it; popup.ErrNotFound for a popup
// the config does not hold; ErrUnavailable or ErrClientGone as Act.
//
// The events are applied at the decision's time, as planned: the confirmation says the popup
// was shown, the decision says when. When the user's state changed since the decision (a click
// on another popup, say), the planned events are applied again, by the display rules, to the
// state as it is now; they only extend hiding, so nothing shows early.
func (d *Decider) Confirm(ctx context.Context, uid string, popupID int64, decisionID string, now time.Time) error {
	snap := d.Snapshots.Load()
	if snap == nil || d.Reservations == nil {
		return ErrUnavailable
	}
	if snap.Entry(popupID) == nil {
		return popup.ErrNotFound
	}
	br := d.Breakers.For(uid)
	if !br.Allow(now) {
		return ErrUnavailable
	}
	bctx, cancel := context.WithTimeout(ctx, 4*d.Budget)
	defer cancel()
	out, err := d.Reservations.Confirm(bctx, uid, decisionID, popupID)
	for try := 0; err == nil && out == popup.Conflict && try < maxRecordTries; try++ {
		var st popup.StoredState
		if st, err = d.Users.Get(bctx, uid, now); err != nil {
			break
		}
		planned, evs, ok, rerr := d.Reservations.Reservation(bctx, uid, decisionID, popupID)
		if err = rerr; err != nil {
			break
		}
		if !ok {
			// Confirmed meanwhile (a concurrent retry) or expired: Confirm says which.
			out, err = d.Reservations.Confirm(bctx, uid, decisionID, popupID)
			continue
		}
		replan(snap.Entry, &st.UserState, &planned, evs)
		out, err = d.Reservations.ConfirmOn(bctx, uid, decisionID, popupID, st.Raw, &st.UserState, evs)
	}
	if err != nil {
		return d.storeFailed(ctx, br, now, opConfirmImpression, err)
	}
	br.Success()
	switch out {
	case popup.Recorded, popup.Duplicate:
		return nil
	case popup.Expired:
		return ErrExpired
	}
	return ErrUnavailable // kept conflicting
}

// replan applies a reservation's events to the user's state s as it is now, each by the display
// rules of its popup at its own time, and updates the events to the state they leave; planned is
// the state the reservation would have written, whose holdout mark it carries over. A popup the
// config no longer holds changes no state; its event is still queued.
func replan(entry func(int64) *snapshot.Entry, s, planned *popup.UserState, evs []event.Event) {
	for i := range evs {
		ev := &evs[i]
		e := entry(ev.PopupID)
		if e == nil {
			continue
		}
		var ps popup.PopupState
		switch ev.Action {
		case event.Impression:
			ps = e.ApplyImpression(s, ev.At)
			ev.DayCount = s.ImpressionsOn(ev.At)
		case event.Exposure:
			ps = e.ApplyExposure(s, ev.At)
		default:
			continue
		}
		ev.NextShowAt, ev.Impressions = ps.NextShowAt, ps.Impressions
	}
	if m := planned.Holdout; m.Day > s.Holdout.Day || (m.Day == s.Holdout.Day && m.Phase > s.Holdout.Phase) {
		s.Holdout = m
	}
}
