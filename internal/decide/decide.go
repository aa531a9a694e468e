// Package decide is the homepage use case: read the user's state, choose a popup, record the
// impression, and decide again when a concurrent request changed the state first; likewise for
// clicks and closes, and the admin preview's explanation. It keeps the circuit breaker's
// accounting and the local answers that spare a steady-state user the Redis round trip.
package decide

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"popupsvc/internal/breaker"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// UserStates is the user-state store the decisions need (redisstore.UserStore implements it).
type UserStates interface {
	// Get returns uid's state and the stored value it was read from.
	Get(ctx context.Context, uid string, now time.Time) (popup.StoredState, error)
	// Record writes next as uid's state if the stored value still equals prev, and queues evs
	// (1 to event.MaxRecordEvents, in order), atomically: all or none. With dedupe (actions) a replayed
	// event id (evs[0]'s) is refused as popup.Duplicate and a uid over its action rate limit as
	// popup.RateLimited.
	Record(ctx context.Context, uid, prev string, next *popup.UserState, evs []event.Event, dedupe bool) (popup.Outcome, error)
}

// RecentStates remembers the state this process last recorded for a user
// (redisstore.UserStore.Recent): possibly no longer the stored one, so that a Record on it is
// refused as popup.Conflict when another write came first.
type RecentStates interface {
	Recent(uid string) (popup.StoredState, bool)
}

// Errors of Act and Explain; the HTTP layer maps each to its status. An unknown popup is
// popup.ErrNotFound.
var (
	// ErrUnavailable: no config yet, the breaker is open, the store failed or kept conflicting.
	ErrUnavailable = errors.New("decision unavailable")
	// ErrRateLimited: the uid is over its action rate limit.
	ErrRateLimited = errors.New("action rate limited")
	// ErrClientGone: the caller's context ended (the client hung up); nobody reads an answer.
	ErrClientGone = errors.New("client gone")
)

// maxRecordTries bounds the optimistic retries when a concurrent request changed the state.
const maxRecordTries = 4

// Decider makes the decisions of one popup-api process. Its fields are set once before use.
type Decider struct {
	Snapshots *snapshot.Holder
	Users     UserStates
	// Breakers guard Redis, one per queue shard of the uid (Breakers.For(uid)).
	Breakers *breaker.Set
	// Budget bounds the store work of one homepage decision; past it the answer degrades. An
	// action gets four times as much.
	Budget time.Duration
	// Local remembers "nothing to show until t" answers; nil = off.
	Local *LocalAnswers
	// Recent, when set, lets a decision start from the state this process last recorded for the
	// user instead of reading it: see Decide.
	Recent RecentStates
	// Conversions queue the conversions (Convert) and Goals say which goals they may name; nil:
	// conversions are unavailable.
	// Reservations park the decisions of Reserve until Confirm; nil: only Decide is available.
	Reservations Reservations
	Conversions  ConversionQueue
	Goals        GoalSet
	Metrics      *Metrics // nil = none
	Log          *slog.Logger

	ids        idSourceOnce
	lastErrLog atomic.Int64
}

// Kind is what a homepage answer is.
type Kind uint8

// Kinds of Answer.
const (
	None       Kind = iota // no popup for this user now
	Shown                  // Answer.Popup was chosen and its impression recorded
	Degraded               // no popup because a dependency failed; not a decision
	ClientGone             // the client hung up; nobody reads an answer
)

// Answer is the homepage decision for one request.
type Answer struct {
	Kind       Kind
	Version    int64           // config version decided on (None and Shown)
	Popup      *snapshot.Entry // the chosen popup (Shown)
	DecisionID string          // the impression's decision id (Shown)
	// Body is the public JSON shown (Shown): the popup's own, or its experiment variant's.
	Body []byte
	// Variant is the key of the experiment variant shown (Shown); "" outside any experiment.
	Variant string
	// Locale is the language of Body (Shown): a translation's tag, or popup.DefaultLocale.
	Locale string
}

// Decide answers the homepage for req at now: the popup to show, if any, with its impression
// recorded. A user for whom nothing can show is remembered locally (see LocalAnswers) until the
// earliest instant something could, so that the next requests cost no Redis round trip.
func (d *Decider) Decide(ctx context.Context, req popup.Request, now time.Time) Answer {
	return d.decide(ctx, req, now, false)
}

// decide is Decide, and with reserve Reserve.
func (d *Decider) decide(ctx context.Context, req popup.Request, now time.Time, reserve bool) Answer {
	snap := d.Snapshots.Load()
	if snap == nil {
		return d.degraded(outDegradedNoSnapshot)
	}
	cands := snap.Candidates(&req)
	if !popup.AnyMatch(cands, &req, now) {
		// Nothing targets this request: no Redis round trip needed.
		d.Metrics.count(outNoCandidate)
		return Answer{Kind: None, Version: snap.Version}
	}
	var key localKey
	if d.Local != nil {
		key.build(&req, snap.RuleKeys(req.Placement))
		if d.Local.lookup(&key, snap, &req, now) {
			d.Metrics.count(outLocalNone)
			return Answer{Kind: None, Version: snap.Version}
		}
	}
	br := d.Breakers.For(req.UID)
	if !br.Allow(now) {
		return d.degraded(outDegradedBreakerOpen)
	}
	bctx, cancel := context.WithTimeout(ctx, d.Budget)
	defer cancel()
	// A returning user this process recorded last is planned on that state, without reading it:
	// only a plan that records is kept, and the record script refuses it (a conflict, then a
	// read as below) when the state is no longer the one remembered. A plan that shows nothing is
	// not trusted from a remembered state: the state is read.
	var recent *popup.StoredState
	tries := maxRecordTries
	if d.Recent != nil {
		if st, ok := d.Recent.Recent(req.UID); ok {
			recent, tries = &st, tries+1 // a stale one takes no retry from a contended user
		}
	}
	for try := 0; try < tries; try++ {
		var st popup.StoredState
		var p decisionPlan
		if try == 0 && recent != nil {
			st = *recent
			p = plan(&planInput{Snap: snap, Cands: cands, Req: req, State: &st.UserState, Now: now, ID: d.ids.get().draw(), NoneExempt: !snap.CapExempt})
		}
		if len(p.Events) == 0 {
			var err error
			if st, err = d.Users.Get(bctx, req.UID, now); err != nil {
				return d.failed(ctx, br, now, opGetState, err)
			}
			p = plan(&planInput{Snap: snap, Cands: cands, Req: req, State: &st.UserState, Now: now, ID: d.ids.get().draw(), NoneExempt: !snap.CapExempt})
		}
		if len(p.Events) == 0 {
			br.Success()
			if d.Local != nil {
				d.Local.remember(&key, snap, &req, now, nothingUntil(snap, cands, req, &st.UserState, now, p.HeldOut))
			}
			d.Metrics.count(outNoneEligible)
			return Answer{Kind: None, Version: snap.Version}
		}
		var out popup.Outcome
		var err error
		if reserve && p.Shown != nil {
			out, err = d.Reservations.Reserve(bctx, req.UID, st.Raw, &st.UserState, p.DecisionID, p.Shown.Popup.ID, p.Events, ReservationTTL)
		} else {
			out, err = d.Users.Record(bctx, req.UID, st.Raw, &st.UserState, p.Events, false)
		}
		if err != nil {
			return d.failed(ctx, br, now, opRecordImpression, err)
		}
		br.Success()
		switch out {
		case popup.Recorded:
			d.Metrics.count(p.outcome())
			return p.answer(snap.Version)
		case popup.Busy:
			// Another reservation of the user's is pending: its popup may be on screen.
			d.Metrics.count(outReservationPending)
			return Answer{Kind: None, Version: snap.Version}
		}
		// Conflict: another request of this user changed the state first; decide again.
	}
	d.Metrics.count(outConflict)
	return Answer{Kind: None, Version: snap.Version}
}

// Report is a click or close of a popup as the app reports it (its Kind is an event.Action).
type Report struct {
	UID        string
	PopupID    int64
	Kind       event.Action    // event.Click or event.Close
	EventID    string          // the client's id for de-duplication; "" = a fresh one
	DecisionID string          // the impression it answers, when the client knows it
	Button     event.ButtonRef // the clicked button; zero = unspecified
}

// ButtonError refuses a click naming a button the popup does not have (in the config this
// instance serves).
type ButtonError struct{ Buttons int }

func (e *ButtonError) Error() string {
	if e.Buttons == 0 {
		return "button: the popup has no buttons"
	}
	return "button must be from 0 to " + strconv.Itoa(e.Buttons-1) + " (the popup has " + strconv.Itoa(e.Buttons) + " buttons)"
}

// Act records a click or close at now. It returns nil when the action is recorded (or was
// already, under the same event id), popup.ErrNotFound for a popup the config does not hold,
// ErrRateLimited, ErrUnavailable, or ErrClientGone.
func (d *Decider) Act(ctx context.Context, a Report, now time.Time) error {
	snap := d.Snapshots.Load()
	if snap == nil {
		return ErrUnavailable
	}
	entry := snap.Entry(a.PopupID)
	if entry == nil {
		return popup.ErrNotFound
	}
	if i, ok := a.Button.Index(); ok && i >= len(entry.Popup.Buttons) {
		return &ButtonError{Buttons: len(entry.Popup.Buttons)}
	}
	br := d.Breakers.For(a.UID)
	if !br.Allow(now) {
		return ErrUnavailable
	}
	if a.EventID == "" {
		a.EventID = d.ids.get().next()
	}
	arms := actionArms(snap, entry, a)
	bctx, cancel := context.WithTimeout(ctx, 4*d.Budget)
	defer cancel()
	for try := 0; try < maxRecordTries; try++ {
		st, err := d.Users.Get(bctx, a.UID, now)
		if err != nil {
			return d.storeFailed(ctx, br, now, opGetState, err)
		}
		var ps popup.PopupState
		if a.Kind == event.Click {
			ps = entry.ApplyClick(&st.UserState, now)
		} else {
			ps = entry.ApplyClose(&st.UserState, now)
		}
		evs := []event.Event{{ID: a.EventID, UID: a.UID, PopupID: a.PopupID, Action: a.Kind, At: now,
			DecisionID: a.DecisionID, NextShowAt: ps.NextShowAt, Impressions: ps.Impressions, Button: a.Button, Arms: arms}}
		out, err := d.Users.Record(bctx, a.UID, st.Raw, &st.UserState, evs, true)
		if err != nil {
			return d.storeFailed(ctx, br, now, opRecordAction, err)
		}
		br.Success()
		switch out {
		case popup.Recorded, popup.Duplicate: // a duplicate was applied once already
			return nil
		case popup.RateLimited:
			return ErrRateLimited
		}
		// Conflict: read again and apply again.
	}
	return ErrUnavailable
}

// ExplainOptions widens what Explain evaluates.
type ExplainOptions struct {
	// Snapshot is the config to evaluate against; nil = the one being served.
	Snapshot *snapshot.Snapshot
	// Extra popups (an unsaved draft, say) are evaluated alongside the snapshot's active ones, in
	// selection order, as if they were live.
	Extra []*popup.Compiled
}

// Explanation is the decision Decide would make, with every popup's verdict.
type Explanation struct {
	Version int64
	// Placement is the placement decided for (the request's, or popup.DefaultPlacement) and Event
	// the event it carried ("" for none): the candidates' placement and trigger reasons are
	// about them.
	Placement, Event string
	Chosen           *popup.Compiled // the popup selection chose first; nil: nothing would show
	// Shown is exactly the popup GET /api/v1/popup would answer, as its public JSON: the
	// variant's for a user in a variant arm; nil for a user in a control with mode none (or a
	// chain of controls ending in none), the popup a fall_through control falls through to
	// otherwise. Nil for an Extra popup, which has no published JSON.
	Shown []byte
	// ShownID is the id of the popup Shown is; 0 when nothing is shown.
	ShownID int64
	// Arm is the user's arm in Chosen's running experiment: a variant's key or "control";
	// "" outside any experiment.
	Arm string
	// Arms are the experiment arms the decision passed, in order, as the events Decide would
	// record name them: every control exposed on the way, then the shown popup's variant.
	Arms []ArmStep
	// Locale is Shown's language for the request's lang (a translation's tag, or
	// popup.DefaultLocale); "" when Shown is nil. LocaleMatch says how lang chose it.
	Locale      string
	LocaleMatch popup.LocaleMatch
	Candidates  []popup.Candidate
}

// ArmStep is one experiment arm a decision passed: the popup and the user's arm in it.
type ArmStep struct {
	PopupID int64
	Arm     string
}

// Explain runs the homepage decision for req at now without recording anything, and says for
// every popup why it would or would not show. It reads the user's state like Decide does but
// neither consults nor fills the local answers, and leaves the breaker alone. The answer is
// Decide's own plan (docs/CONTRACT.md §10: a control shows nothing, or falls through), so what it
// says the user gets is what the public API would answer.
func (d *Decider) Explain(ctx context.Context, req popup.Request, now time.Time, opt ExplainOptions) (Explanation, error) {
	snap := opt.Snapshot
	if snap == nil {
		snap = d.Snapshots.Load()
	}
	if snap == nil {
		return Explanation{}, ErrUnavailable
	}
	cands := snap.Ordered
	if len(opt.Extra) > 0 {
		cands = append(append(make([]*popup.Compiled, 0, len(cands)+len(opt.Extra)), cands...), opt.Extra...)
		popup.SortForSelection(cands)
	}
	st, err := d.Users.Get(ctx, req.UID, now)
	if err != nil {
		return Explanation{}, fmt.Errorf("%w: read user state: %w", ErrUnavailable, err)
	}
	pace := snap.Pacing
	pace.HeldOut = snap.HoldoutCheck.Holds(req.UID) // the popups the holdout keeps from the user say so
	chosen, verdicts := popup.Explain(cands, req, &st.UserState, now, pace)
	ex := Explanation{Version: snap.Version, Placement: req.PlacementOr(), Event: req.Event, Chosen: chosen, Candidates: verdicts}
	if chosen == nil {
		return ex, nil
	}
	if arm := chosen.Arm(req.UID); arm >= 0 {
		ex.Arm = chosen.Popup.Experiment.ArmKey(arm)
	}
	if snap.Entry(chosen.Popup.ID) == nil || snap.Entry(chosen.Popup.ID).Compiled != chosen {
		return ex, nil // an Extra: not in the snapshot, so no plan (and no published JSON)
	}
	// The state was read for this call only: planning on it changes nothing stored.
	p := plan(&planInput{Snap: snap, Cands: cands, Req: req, State: &st.UserState, Now: now})
	for _, ev := range p.Events {
		// (the holdout's group is not an experiment's arm: a holdout event names only it, and the
		// others' rides after the arm of the event it marks)
		if len(ev.Arms) > 0 && ev.Arms[0].PopupID != popup.HoldoutPopupID {
			ex.Arms = append(ex.Arms, ArmStep{PopupID: ev.Arms[0].PopupID, Arm: ev.Arms[0].Arm})
		}
	}
	if p.Shown != nil {
		ex.Shown, ex.Locale, ex.LocaleMatch = p.Shown.ShownIn(p.Arm, req.Lang)
		ex.ShownID = p.Shown.Popup.ID
	}
	return ex, nil
}

// storeFailed accounts for a failed store call of a decision or an action and returns what the
// caller reports: ErrClientGone when the caller's context ended (then the store did not fail, the
// hang-up cancelled its call, and nobody reads an answer), else ErrUnavailable.
func (d *Decider) storeFailed(ctx context.Context, br *breaker.Breaker, now time.Time, op storeOp, err error) error {
	if ctx.Err() != nil {
		// Counting a hang-up would let a mass disconnect (a load generator stopping, a proxy
		// restarting) open the breaker and degrade everybody else's answers.
		d.Metrics.count(outClientGone)
		return ErrClientGone
	}
	if errors.Is(err, popup.ErrStateLoad) {
		// MySQL slow or saturated while loading a lost state: this request degrades, but it
		// says nothing about Redis, so the breaker is left alone.
		d.Metrics.mysqlError()
	} else {
		br.Failure(now)
		d.Metrics.redisError(op)
	}
	// At most one log line a second: an outage must not turn into a log flood.
	if last := d.lastErrLog.Load(); now.UnixNano()-last > int64(time.Second) && d.lastErrLog.CompareAndSwap(last, now.UnixNano()) && d.Log != nil {
		d.Log.Warn("redis call failed; answering degraded", "op", op.String(), "err", err)
	}
	return ErrUnavailable
}

// failed is the homepage answer when a store call of the decision failed (storeFailed):
// ClientGone when the caller hung up, else degraded, labelled by the store that failed (MySQL
// only ever behind a read of a lost state).
func (d *Decider) failed(ctx context.Context, br *breaker.Breaker, now time.Time, op storeOp, err error) Answer {
	if d.storeFailed(ctx, br, now, op, err) == ErrClientGone {
		return Answer{Kind: ClientGone}
	}
	if errors.Is(err, popup.ErrStateLoad) {
		return d.degraded(outDegradedMySQL)
	}
	return d.degraded(outDegradedRedisError)
}

func (d *Decider) degraded(o outcome) Answer {
	d.Metrics.count(o)
	d.Metrics.degradedAnswer()
	return Answer{Kind: Degraded}
}
