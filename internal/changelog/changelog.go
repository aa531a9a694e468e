// Package changelog holds the change log's read models: a popup's audit entries (AuditEntry,
// AuditQuery, GET /admin/v1/audit) and every resource's changes (ResourceChange,
// ResourceChangeQuery, ChangeResource, GET /admin/v1/audit/changes), with the names the log
// gives operators' and privacy requests' changes. mysqlstore fills them; the popups and audit
// admin slices (internal/admin/popups, internal/admin/audit) serve them.
//
// Why a package of its own rather than internal/popup or a slice: no rule of publishing or
// deciding reads the log, so the domain does not carry it; and the adapter that fills it must not
// import an HTTP slice. It imports only the domain, for the records an entry carries (a popup, an
// actor, a role, a kind of change).
package changelog

import (
	"slices"
	"time"

	"popupsvc/internal/popup"
)

// AuditEntry records one write: who did what to which popup, and the popup before and after
// (Before is nil for a create).
type AuditEntry struct {
	ID       int64
	At       time.Time
	Actor    string
	Role     popup.Role // the actor's role at the write; 0 for writes from before roles were recorded
	Action   popup.ChangeKind
	PopupID  int64
	Revision int64
	Before   *popup.Popup
	After    *popup.Popup
}

// AuditQuery selects audit entries, newest first: of one popup and/or one actor when set, with an
// id below Before when set, at most Limit.
type AuditQuery struct {
	PopupID int64
	Actor   string
	Before  int64
	Limit   int
}

// ChangeResource names what a change of the audit log (GET /admin/v1/audit/changes?resource=)
// was made to.
type ChangeResource string

// The resources of the audit log's changes.
const (
	// ChangePopups are the popups' writes (popup_audit) but their experiments' transitions.
	ChangePopups ChangeResource = "popups"
	// ChangeExperiments are the experiments' transitions and reassignments (the popup_audit rows
	// of popup.ChangeExperimentStart, ChangeExperimentStop, ChangeExperimentConclude and
	// ChangeReassign).
	ChangeExperiments ChangeResource = "experiments"
	ChangeAudiences   ChangeResource = "audiences"
	ChangeGoals       ChangeResource = "goals"
	ChangeSettings    ChangeResource = "settings"
	ChangeHoldout     ChangeResource = "holdout"
	// ChangeOperators are the differences between the operators of successive popup-api starts.
	ChangeOperators ChangeResource = "operators"
	// ChangePrivacy are the erasures asked and done and the exports made.
	ChangePrivacy ChangeResource = "privacy"
)

// ChangeAll asks for every resource's changes, merged newest first.
const ChangeAll ChangeResource = "all"

// ChangeResources are the resources of ResourceChange, in the order the contract lists them;
// among changes made at the same instant, an earlier resource's come first.
var ChangeResources = []ChangeResource{ChangePopups, ChangeExperiments, ChangeAudiences, ChangeGoals,
	ChangeSettings, ChangeHoldout, ChangeOperators, ChangePrivacy}

// ExperimentChanges are the popup changes the audit log lists under ChangeExperiments.
var ExperimentChanges = []popup.ChangeKind{popup.ChangeExperimentStart, popup.ChangeExperimentStop,
	popup.ChangeExperimentConclude, popup.ChangeReassign}

// Rank is the resource's place in ChangeResources (-1 for none).
func (r ChangeResource) Rank() int { return slices.Index(ChangeResources, r) }

// The actors of the changes no operator made.
const (
	// ConfigurationActor records the operators popup-api started with.
	ConfigurationActor = "(configuration)"
)

// OperatorChange is what a start of popup-api found changed in one operator.
type OperatorChange string

// The operator changes.
const (
	OperatorAdded   OperatorChange = "add"
	OperatorRemoved OperatorChange = "remove"
	OperatorRole    OperatorChange = "role"
	OperatorToken   OperatorChange = "token"
)

// The privacy requests' changes.
const (
	PrivacyErasureAsked = "erasure"
	PrivacyErased       = "erased"
	PrivacyExport       = "export"
)

// ResourceChangeQuery selects changes of one resource, newest first: by Actor when set, whose
// subject's name contains Name (case-insensitive) when set, at most Limit; before the change of
// id Before when set. ByTime orders them by time (then id) instead of id alone, as a merge of
// every resource needs; then Until, when set, keeps only those made before it, or at it with an
// id below UntilID.
type ResourceChangeQuery struct {
	Resource ChangeResource
	Actor    string
	Name     string
	Before   int64
	Limit    int
	ByTime   bool
	Until    time.Time
	UntilID  int64
}

// ResourceChange is one recorded change. ID orders the changes of its resource (a later change
// has a larger one). Subject is what was changed: the popup's id, the audience's id, the goal's
// key, the setting's name, the holdout phase's number, the operator's name or the erasure's id
// (empty for an export); Name is its name, when it has one (a popup's, an audience's, a goal's,
// an operator's, a setting's).
type ResourceChange struct {
	ID       int64
	Resource ChangeResource
	At       time.Time
	Actor    popup.Actor
	Action   string
	Subject  string
	Name     string
	// PopupID is the popup of a popup's or an experiment's change.
	PopupID int64
	// Version is the audience's or goal's version the change wrote, or the popup's revision (0
	// for the others).
	Version int64
	// Added, Removed and Size are an audience change's members (Size after it); Removed also the
	// rows and keys an erasure removed.
	Added, Removed, Size int64
	// Before and After are a setting's values around the change (Before nil: never set), the
	// holdout's percentage (After of a phase's start, Before of its end), an operator's roles, or
	// the variant a concluded experiment shipped (After).
	Before, After *string
}
