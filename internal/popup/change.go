package popup

import (
	"fmt"
	"time"
)

// ErrNameTaken is what a write returns when it would give two non-archived popups the same
// name (an import matches popups by name, so a live name is unique).
var ErrNameTaken error = &Error{code: CodeNameTaken, msg: "name taken",
	answer: "another popup that is not archived has this name; names of live popups are unique",
	field:  "name", fieldMsg: "is the name of another popup that is not archived"}

// ErrRevisionNotKept is what a write returns for a rollback to a revision the popup never had.
var ErrRevisionNotKept error = &Error{code: CodeRevisionNotKept, msg: "no such revision",
	answer: "the popup has no such revision",
	field:  "revision", fieldMsg: "is not a revision of this popup (see its history)"}

// ChangeKind is what a write did to a popup, as the audit log records it.
type ChangeKind string

// The kinds of change, as the audit log names them (its "action").
const (
	ChangeCreate   ChangeKind = "create"
	ChangeUpdate   ChangeKind = "update"
	ChangeArchive  ChangeKind = "archive"
	ChangeRollback ChangeKind = "rollback"
	ChangeImport   ChangeKind = "import"
	// ChangeReassign is an update that changed a running or stopped experiment's arms within its
	// phase (accept_reassignment), moving users between arms; it needs the rights of an update.
	ChangeReassign ChangeKind = "reassign"
	// The experiment transitions (ExperimentTransition).
	ChangeExperimentStart    ChangeKind = "experiment_start"
	ChangeExperimentStop     ChangeKind = "experiment_stop"
	ChangeExperimentConclude ChangeKind = "experiment_conclude"
)

// Change is one popup write as the history and the audit log record it: who made it, what it
// did, and the popup before (nil for a create) and after, as stored (its id, revision and
// updated_at are the store's).
type Change struct {
	Actor  Actor
	Action ChangeKind
	Before *Popup
	After  Popup
}

// UpdateOptions are how an update writes, beyond the popup it writes.
type UpdateOptions struct {
	// IfRevision, when not nil, lets the update write only while the popup is at one of these
	// revisions (an empty list matches none).
	IfRevision []int64
	// AcceptReassignment keeps the experiment's phase when the update changes its arms, moving
	// users between arms (KeepExperiment); the audit log records such a write as ChangeReassign.
	AcceptReassignment bool
	// EndExperiment lets a write that changes the content of a popup whose experiment is
	// concluded remove the experiment with it (KeepShipped); without it such a write is refused.
	EndExperiment bool
	// KeepPrimaryGoal keeps the stored experiment's primary goal: the write did not name one (an
	// experiment without a primary_goal key, docs/CONTRACT.md §10), so it changes no verdict.
	KeepPrimaryGoal bool
}

// ImportOptions are how an import writes.
type ImportOptions struct {
	// DryRun counts what the import would do and writes nothing.
	DryRun bool
	// EndExperiment is UpdateOptions.EndExperiment for every popup the import updates.
	EndExperiment bool
	// KeepPrimaryGoal is UpdateOptions.KeepPrimaryGoal per popup of the import, by index (nil:
	// every popup names its primary goal).
	KeepPrimaryGoal []bool
}

// ExperimentTransition is a change of a popup's experiment status (docs/CONTRACT.md §10,
// Transitions): Action is ChangeExperimentStart, ChangeExperimentStop or
// ChangeExperimentConclude, Variant the key of the variant a conclude ships.
type ExperimentTransition struct {
	Action  ChangeKind
	Variant string
}

// Apply makes the transition on p at now; p's experiment (and for a conclude its content)
// changes in place. The errors are those of Start, Stop and Conclude.
func (t ExperimentTransition) Apply(p *Popup, now time.Time) error {
	switch t.Action {
	case ChangeExperimentStart:
		return p.Experiment.Start(now)
	case ChangeExperimentStop:
		return p.Experiment.Stop()
	case ChangeExperimentConclude:
		return p.Conclude(t.Variant)
	}
	return fmt.Errorf("%q is not an experiment transition", t.Action)
}

// Revision is a popup as one write left it.
type Revision struct {
	Revision int64
	At       time.Time
	Actor    string
	Role     Role // the actor's role at the write; 0 for writes from before roles were recorded
	Popup    Popup
}

// ImportResult counts what an import did (or, in a dry run, would do).
type ImportResult struct {
	Created, Updated, Unchanged int
}
