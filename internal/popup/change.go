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

// AuditEntry records one write: who did what to which popup, and the popup before and after
// (Before is nil for a create).
type AuditEntry struct {
	ID       int64
	At       time.Time
	Actor    string
	Role     Role // the actor's role at the write; 0 for writes from before roles were recorded
	Action   ChangeKind
	PopupID  int64
	Revision int64
	Before   *Popup
	After    *Popup
}

// AuditQuery selects audit entries, newest first: of one popup and/or one actor when set, with an
// id below Before when set, at most Limit.
type AuditQuery struct {
	PopupID int64
	Actor   string
	Before  int64
	Limit   int
}

// ListQuery selects one page of popups: with one status (when set), in one campaign state at Now
// (when set), archived ones only when Status or State is archived or IncludeArchived; matching
// Search when set; in Sort order, after the popup at After when set; at most Limit.
type ListQuery struct {
	Status          Status
	State           CampaignState
	Now             time.Time // the instant State is judged at
	IncludeArchived bool
	// Search matches a popup whose name, title or content contains it (case-insensitive), or,
	// when it is a decimal number, whose id it is.
	Search string
	// Experiment keeps the popups with an experiment in this status, or with any experiment
	// (ExperimentAny), or without one (ExperimentNone); "" keeps every popup.
	Experiment ExperimentFilter
	Sort       ListSort
	After      *ListPosition
	Limit      int
}

// ExperimentFilter is a list's filter on the popups' experiments: an ExperimentStatus, or one of
// these.
type ExperimentFilter string

// The filters of a list on experiments beyond the statuses.
const (
	ExperimentAny  ExperimentFilter = "any"
	ExperimentNone ExperimentFilter = "none"
)

// Valid reports whether f is a filter a list takes ("" is none).
func (f ExperimentFilter) Valid() bool {
	return f == "" || f == ExperimentAny || f == ExperimentNone || ExperimentStatus(f).Valid()
}

// ListPage is one page of a list and the number of popups matching the query's filters over
// every page.
type ListPage struct {
	Popups []Popup
	Total  int
}

// SortKey is what a popup list can be ordered by.
type SortKey string

// The sort keys of a popup list.
const (
	SortByID        SortKey = "id"
	SortByUpdatedAt SortKey = "updated_at"
	SortByName      SortKey = "name"
	SortByPriority  SortKey = "priority"
)

// ListSort orders a popup list by Key, descending when Desc. Popups with equal keys follow in id
// order of the same direction, so every popup has one place and a page never splits a tie.
type ListSort struct {
	Key  SortKey
	Desc bool
}

// ParseListSort reads "key" or "-key" (descending); ok is false for anything else. "" is by id.
func ParseListSort(s string) (sort ListSort, ok bool) {
	if s == "" {
		return ListSort{Key: SortByID}, true
	}
	if s[0] == '-' {
		sort.Desc, s = true, s[1:]
	}
	switch k := SortKey(s); k {
	case SortByID, SortByUpdatedAt, SortByName, SortByPriority:
		sort.Key = k
		return sort, true
	}
	return ListSort{}, false
}

// String is the sort as ParseListSort reads it.
func (s ListSort) String() string {
	if s.Desc {
		return "-" + string(s.Key)
	}
	return string(s.Key)
}

// ListPosition is a popup's place in a sorted list: its id and the value of the sort key (only
// the field of the list's key is used).
type ListPosition struct {
	ID        int64
	UpdatedAt time.Time
	Name      string
	Priority  int
}

// PositionOf is p's place in a list sorted by any key.
func PositionOf(p Popup) ListPosition {
	return ListPosition{ID: p.ID, UpdatedAt: p.UpdatedAt, Name: p.Name, Priority: p.Priority}
}

// ImportResult counts what an import did (or, in a dry run, would do).
type ImportResult struct {
	Created, Updated, Unchanged int
}
