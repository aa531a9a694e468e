// Package manage is the popup write use case: create, update, the experiment transitions,
// archive, rollback and import each describe their change and run it through one transactional
// path that applies the rules of a popup write in one order, over a store it declares (Store).
package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"popupsvc/internal/popup"
)

// Service makes the admin API's popup writes. Every write records the popup's new revision and
// an audit entry naming the actor and its role, and bumps the config version, in its own
// transaction; a write that changes nothing records nothing and bumps nothing. Pushing a
// committed change to the running instances is the caller's (the admin API's reload).
type Service struct {
	store Store
	now   func() time.Time
}

// New returns the writes over store; now is the clock of the experiment phases (when a phase
// starts).
func New(store Store, now func() time.Time) *Service { return &Service{store: store, now: now} }

// edit is one popup of a write: the stored popup it changes (nil: a new one), what the write
// makes of it, and the action the audit log records.
type edit struct {
	before *popup.Popup
	next   popup.Popup
	action popup.ChangeKind
	// keepGoal keeps the stored experiment's primary goal: the write does not name one
	// (popup.UpdateOptions.KeepPrimaryGoal, a rollback to a revision without one).
	keepGoal bool
}

// write is what one exported write asks of the path (run).
type write struct {
	action popup.ChangeKind
	// after is the status a create or an update asks for (the rights rule's After).
	after      popup.Status
	dryRun     bool
	ifRevision []int64 // nil: unconditional
	// lock reads and locks the popups the write changes, each with the content the write asks for
	// (or, when the write starts from the stored popup or a revision, a zero next).
	lock func(ctx context.Context, tx Tx) ([]edit, error)
	// target, when set, reads what the write starts from (a rollback's old revision) into next.
	target func(ctx context.Context, tx Tx, e *edit) error
	// apply is the write's own change of next at now: the bucket seed and experiment phase rules
	// of a content write (settle), an experiment transition, an archive.
	apply func(e *edit, now time.Time) error
	// always writes even when nothing changes: an archive and a transition are events the history
	// records.
	always bool
	// batch marks an import: an error of one popup names its index (popup.BatchItemError).
	batch bool
	// content marks a write of content (create, update, rollback, import): the audiences its
	// targeting names must exist.
	content bool
}

// outcome is what the path did: the popups as stored (written, or left as they were), in the
// order of the edits, and the counts.
type outcome struct {
	stored []popup.Popup
	counts popup.ImportResult
}

// run is the one path of every popup write, in one transaction, in this order:
//
//  1. lock the stored popups the write changes (popup.ErrNotFound);
//  2. role: the actor's role against the rights rule (popup.Write.Needs), with the stored status
//     read under the lock, so an editor's edit of a draft cannot become a change of a popup that
//     another writer published meanwhile (*popup.ForbiddenError);
//  3. target: what the write starts from (a rollback's revision: popup.ErrRevisionNotKept);
//  4. If-Match: the stored revision against ifRevision (popup.ErrRevisionMismatch);
//  5. the write's own rules: the bucket seed, the experiment's phase rules, a transition; then,
//     for a write of content, the audiences its targeting names must exist (locked in share mode
//     until the write commits, so that none is deleted under it), and for a write of content or
//     of a running experiment the experiment's primary goal (locked likewise);
//  6. no change: a write that would leave the popup as it is writes nothing (an archive and a
//     transition always write);
//  7. store the popups, record their revisions and audit entries, bump the config version.
//
// The order is the contract: a role that may not make a write is refused whatever the revision
// or content, so a save that would change nothing is still refused to it; a stale If-Match
// refuses whatever the content.
func (s *Service) run(ctx context.Context, actor popup.Actor, w write) (outcome, error) {
	var out outcome
	err := s.store.InTx(ctx, func(tx Tx) error {
		out = outcome{}
		edits, err := w.lock(ctx, tx)
		if err != nil {
			return err
		}
		if err := actor.May(w.rights(edits)); err != nil {
			return err
		}
		now := s.now()
		var creates, updates []int
		out.stored = make([]popup.Popup, len(edits))
		for i := range edits {
			e := &edits[i]
			if err := w.rules(ctx, tx, e, now); err != nil {
				if w.batch {
					return &popup.BatchItemError{Index: i, Err: err}
				}
				return err
			}
			switch {
			case e.before == nil:
				creates = append(creates, i)
			case !w.always && sameContent(*e.before, e.next):
				out.stored[i] = *e.before
				out.counts.Unchanged++
			default:
				updates = append(updates, i)
			}
		}
		out.counts.Created, out.counts.Updated = len(creates), len(updates)
		if w.dryRun || len(creates)+len(updates) == 0 {
			return nil
		}
		return store(ctx, tx, actor, w.ifRevision, edits, creates, updates, out.stored)
	})
	return out, err
}

// rights is the write as the rights rule sees it; a single popup's write names its stored status.
func (w write) rights(edits []edit) popup.Write {
	r := popup.Write{Action: w.action, After: w.after, DryRun: w.dryRun}
	if !w.batch && len(edits) == 1 && edits[0].before != nil {
		r.Before = edits[0].before.Status
	}
	return r
}

// rules are steps 3 to 5 of run for one edit.
func (w write) rules(ctx context.Context, tx Tx, e *edit, now time.Time) error {
	if w.target != nil {
		if err := w.target(ctx, tx, e); err != nil {
			return err
		}
	}
	if e.before != nil && w.ifRevision != nil && !slices.Contains(w.ifRevision, e.before.Revision) {
		return popup.ErrRevisionMismatch
	}
	if err := w.apply(e, now); err != nil {
		return err
	}
	if w.content {
		if err := audiencesExist(ctx, tx, e.next.Targeting.Audiences); err != nil {
			return err
		}
	}
	if w.content || e.next.Experiment != nil && e.next.Experiment.Status == popup.ExperimentRunning {
		// A running experiment, or one a write of content sets, decides on a goal that exists.
		return goalExists(ctx, tx, e.next.Experiment)
	}
	return nil
}

// audiencesExist refuses targeting that names an audience the store does not hold, naming the
// first such field (targeting.audiences.include[0]).
func audiencesExist(ctx context.Context, tx Tx, refs popup.AudienceRefs) error {
	ids := refs.IDs()
	if len(ids) == 0 {
		return nil
	}
	found, err := tx.ExistingAudiences(ctx, ids)
	if err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		ids  []int64
	}{{"include", refs.Include}, {"exclude", refs.Exclude}} {
		for i, id := range l.ids {
			if !slices.Contains(found, id) {
				return popup.UnknownAudience("targeting.audiences."+l.name+"["+strconv.Itoa(i)+"]", id)
			}
		}
	}
	return nil
}

// store is step 7 of run: it inserts the edits at creates, overwrites those at updates (under
// ifRevision), fills stored with the popups as the store returns them, records each change and
// bumps the config version.
func store(ctx context.Context, tx Tx, actor popup.Actor, ifRevision []int64, edits []edit, creates, updates []int, stored []popup.Popup) error {
	changes := make([]popup.Change, 0, len(creates)+len(updates))
	keep := func(at []int, written []popup.Popup) {
		for j, i := range at {
			stored[i] = written[j]
			changes = append(changes, popup.Change{Actor: actor, Action: edits[i].action, Before: edits[i].before, After: written[j]})
		}
	}
	if len(creates) > 0 {
		written, err := tx.Insert(ctx, nexts(edits, creates))
		if err != nil {
			return err
		}
		keep(creates, written)
	}
	if len(updates) > 0 {
		written, err := tx.Overwrite(ctx, nexts(edits, updates), ifRevision)
		if err != nil {
			return err
		}
		keep(updates, written)
	}
	if err := tx.Record(ctx, changes); err != nil {
		return err
	}
	return tx.BumpVersion(ctx)
}

// nexts is what the edits at at write, each under its stored popup's id (whatever id the content
// carried: a revision's, an import's).
func nexts(edits []edit, at []int) []popup.Popup {
	ps := make([]popup.Popup, len(at))
	for j, i := range at {
		ps[j] = edits[i].next
		if b := edits[i].before; b != nil {
			ps[j].ID = b.ID
		}
	}
	return ps
}

// settle applies the rules of a write of content (a create, an update, a rollback, an import) to
// next: the bucket seed (a new popup draws one unless it has one; a stored popup's never changes:
// popup.ErrBucketSeedChanged), the shipped-content rule (popup.KeepShipped: a change of the
// content a concluded experiment shipped ends it, or is refused), the stored experiment's primary
// goal where the write names none (edit.keepGoal) and the experiment's phase rules against the
// stored experiment (popup.KeepExperiment); a write that moves users between arms within the
// phase is audited as a reassign.
func settle(opts popup.UpdateOptions) func(e *edit, now time.Time) error {
	return func(e *edit, now time.Time) error {
		var stored popup.Popup
		if e.before != nil {
			stored = *e.before
			if err := e.next.KeepBucketSeed(stored); err != nil {
				return err
			}
		} else {
			e.next.GiveBucketSeed()
		}
		if _, err := popup.KeepShipped(&e.next, e.before, opts.EndExperiment); err != nil {
			return err
		}
		e.next.Experiment = copyExperiment(e.next.Experiment) // the caller's popup may share it
		if e.keepGoal && e.next.Experiment != nil && stored.Experiment != nil {
			e.next.Experiment.PrimaryGoal = stored.Experiment.PrimaryGoal
		}
		reassigned, err := popup.KeepExperiment(e.next.Experiment, stored.Experiment, opts.AcceptReassignment, now)
		if reassigned {
			e.action = popup.ChangeReassign
		}
		return err
	}
}

// copyExperiment is a copy of e that the rules may change (nil: none).
func copyExperiment(e *popup.Experiment) *popup.Experiment {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// one locks popup id for a write of one popup; next is the content the write asks for.
func one(id int64, next popup.Popup, action popup.ChangeKind) func(context.Context, Tx) ([]edit, error) {
	return func(ctx context.Context, tx Tx) ([]edit, error) {
		before, err := tx.GetForUpdate(ctx, id)
		if err != nil {
			return nil, err
		}
		return []edit{{before: &before, next: next, action: action}}, nil
	}
}

// fromStored makes the stored popup the write's starting point (an archive, a transition).
func fromStored(ctx context.Context, tx Tx, e *edit) error {
	e.next = *e.before
	e.next.Experiment = copyExperiment(e.before.Experiment)
	return nil
}

// sameContent reports whether writing p over old would leave old as it is: everything but the
// server-managed fields (id, revision, times of the row) compares equal as a store keeps it:
// window times at millisecond precision in UTC, JSON compacted, a nil list apart from an empty
// one. It compares every field of popup.Popup, so a field added there needs nothing here: every
// field is content a store keeps (popuptest.Full's round trips hold the stores to it).
func sameContent(old, p popup.Popup) bool {
	a, errA := contentKey(old)
	b, errB := contentKey(p)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

func contentKey(p popup.Popup) ([]byte, error) {
	p.ID, p.Revision, p.CreatedAt, p.UpdatedAt = 0, 0, time.Time{}, time.Time{}
	for _, t := range []**time.Time{&p.StartAt, &p.EndAt} {
		if *t != nil {
			s := (*t).UTC().Truncate(time.Millisecond)
			*t = &s
		}
	}
	return json.Marshal(p)
}

// Create stores a new popup at revision 1 and returns it with its id. A popup without a bucket
// seed gets a fresh one; its experiment, if any, is a draft at phase 1.
func (s *Service) Create(ctx context.Context, actor popup.Actor, p popup.Popup) (popup.Popup, error) {
	out, err := s.run(ctx, actor, write{action: popup.ChangeCreate, after: p.Status, content: true,
		lock: func(context.Context, Tx) ([]edit, error) {
			return []edit{{next: p, action: popup.ChangeCreate}}, nil
		},
		apply: settle(popup.UpdateOptions{})})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("create popup: %w", err)
	}
	return out.stored[0], nil
}

// Update replaces popup id with p and increments its revision (settle: p without a bucket seed
// keeps the stored one; the experiment follows the phase rules, opts.AcceptReassignment keeping
// the phase). With opts.IfRevision non-nil the write happens only while the popup's revision is
// one of them, so of two writers who read the same revision exactly one wins. When p equals the
// stored popup nothing is written: changed is false and the stored popup is returned as it is.
func (s *Service) Update(ctx context.Context, actor popup.Actor, id int64, p popup.Popup, opts popup.UpdateOptions) (stored popup.Popup, changed bool, err error) {
	lock := one(id, p, popup.ChangeUpdate)
	out, err := s.run(ctx, actor, write{action: popup.ChangeUpdate, after: p.Status, ifRevision: opts.IfRevision, content: true,
		lock: func(ctx context.Context, tx Tx) ([]edit, error) {
			edits, err := lock(ctx, tx)
			for i := range edits {
				edits[i].keepGoal = opts.KeepPrimaryGoal
			}
			return edits, err
		}, apply: settle(opts)})
	if err != nil {
		return popup.Popup{}, false, fmt.Errorf("update popup %d: %w", id, err)
	}
	return out.stored[0], out.counts.Updated > 0, nil
}

// Transition makes an experiment transition (start, stop, conclude) of popup id at the
// service's clock: popup.ExperimentTransition.Apply, whose errors it returns. It always writes a
// revision and an audit entry of the transition's action.
func (s *Service) Transition(ctx context.Context, actor popup.Actor, id int64, t popup.ExperimentTransition, ifRevision []int64) (popup.Popup, error) {
	out, err := s.run(ctx, actor, write{action: t.Action, ifRevision: ifRevision, always: true,
		lock: one(id, popup.Popup{}, t.Action), target: fromStored,
		apply: func(e *edit, now time.Time) error { return t.Apply(&e.next, now) }})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("%s of popup %d: %w", t.Action, id, err)
	}
	return out.stored[0], nil
}

// Archive sets a popup's status to archived (DELETE in the admin API: rows are never removed,
// the action log refers to them) and increments its revision, always.
func (s *Service) Archive(ctx context.Context, actor popup.Actor, id int64, ifRevision []int64) (popup.Popup, error) {
	out, err := s.run(ctx, actor, write{action: popup.ChangeArchive, ifRevision: ifRevision, always: true,
		lock: one(id, popup.Popup{}, popup.ChangeArchive), target: fromStored,
		apply: func(e *edit, _ time.Time) error { e.next.Status = popup.StatusArchived; return nil }})
	if err != nil {
		return popup.Popup{}, fmt.Errorf("archive popup %d: %w", id, err)
	}
	return out.stored[0], nil
}

// Rollback writes revision toRevision's content over popup id as a new revision, audited as a
// rollback, as an update of that content would (settle: the stored bucket seed, the old
// experiment's settings with the stored status and phase); like Update it writes nothing when
// that content is what the popup holds already (changed false). The status is the old
// revision's too: rolling back over an archive brings the popup back. opts.IfRevision and
// opts.EndExperiment are an update's; a rollback never keeps the assignment of changed arms. A
// revision whose experiment has no primary goal keeps the stored one (edit.keepGoal).
func (s *Service) Rollback(ctx context.Context, actor popup.Actor, id, toRevision int64, opts popup.UpdateOptions) (stored popup.Popup, changed bool, err error) {
	out, err := s.run(ctx, actor, write{action: popup.ChangeRollback, ifRevision: opts.IfRevision, content: true,
		lock: one(id, popup.Popup{}, popup.ChangeRollback),
		target: func(ctx context.Context, tx Tx, e *edit) error {
			old, err := tx.Revision(ctx, id, toRevision)
			if err != nil {
				return fmt.Errorf("revision %d: %w", toRevision, err)
			}
			e.next = old
			// A revision without a primary goal does not name one: the stored goal stays, so a
			// rollback changes no verdict unless the revision decided on a goal itself.
			e.keepGoal = old.Experiment != nil && old.Experiment.PrimaryGoal == ""
			return nil
		},
		apply: settle(popup.UpdateOptions{EndExperiment: opts.EndExperiment})})
	if err != nil {
		return popup.Popup{}, false, fmt.Errorf("roll back popup %d to revision %d: %w", id, toRevision, err)
	}
	return out.stored[0], out.counts.Updated > 0, nil
}

// Import matches each popup of ps to the live popup of the same name and, in one transaction with
// one config version bump, creates those without a match and updates those whose content differs
// (each audited as an import), with an update's rules (settle, opts.EndExperiment) against the
// matched popup; an
// error of one popup is a *popup.BatchItemError naming it. A dry run counts the same way and
// writes nothing; so does an import that would change nothing. ps must hold no archived popup and
// no name twice (the caller validated it); the matched popups stay locked while the import runs,
// so the counts are exact.
func (s *Service) Import(ctx context.Context, actor popup.Actor, ps []popup.Popup, opts popup.ImportOptions) (popup.ImportResult, error) {
	out, err := s.run(ctx, actor, write{action: popup.ChangeImport, dryRun: opts.DryRun, batch: true, content: true,
		lock: func(ctx context.Context, tx Tx) ([]edit, error) {
			names := make([]string, len(ps))
			for i, p := range ps {
				names[i] = p.Name
			}
			matched, err := tx.LockByName(ctx, names)
			if err != nil {
				return nil, err
			}
			edits := make([]edit, len(ps))
			for i, p := range ps {
				edits[i] = edit{before: matched[i], next: p, action: popup.ChangeImport,
					keepGoal: i < len(opts.KeepPrimaryGoal) && opts.KeepPrimaryGoal[i]}
				if old := matched[i]; old != nil {
					edits[i].next.Name = old.Name // an import does not rename, even where the index ignores a difference
				}
			}
			return edits, nil
		},
		apply: settle(popup.UpdateOptions{EndExperiment: opts.EndExperiment})})
	if err != nil {
		return popup.ImportResult{}, fmt.Errorf("import: %w", err)
	}
	return out.counts, nil
}
