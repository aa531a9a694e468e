package popup

import "fmt"

// Role is what an admin operator may do. Roles are ordered: each has the rights of the ones
// below it (viewer < editor < publisher < admin). The zero value is no role, which nothing
// allows. Roles and the rule of which role each popup write needs (Write.Needs) are the
// domain's: the rule is stated in popup statuses and change kinds and decided in the write's
// transaction, every change record keeps the actor's role, and a refusal is a domain error
// (CodeForbidden). The operators who hold the roles, and their tokens, are internal/operator's.
type Role uint8

// The roles, least first.
const (
	// RoleViewer reads everything: popups, history, audit, stats, export, user state, previews
	// (which record nothing) and /metrics.
	RoleViewer Role = iota + 1
	// RoleEditor also creates drafts and edits drafts that stay drafts, and dry-runs an import.
	RoleEditor
	// RolePublisher also makes changes live: any status change, edits of a popup that is not a
	// draft, archive, rollback and import.
	RolePublisher
	// RoleAdmin also runs the operations: cache reload, /debug/pprof, the operator list (and the
	// settings).
	RoleAdmin
)

// DefaultRole is the role of an operator declared without one (name:token): every operator
// declared before roles existed keeps full rights.
const DefaultRole = RoleAdmin

// RoleNames lists the roles in the words every error message uses.
const RoleNames = "viewer, editor, publisher or admin"

var roleNames = [...]string{RoleViewer: "viewer", RoleEditor: "editor", RolePublisher: "publisher", RoleAdmin: "admin"}

// String is the role's name ("" for no role).
func (r Role) String() string {
	if !r.Valid() {
		return ""
	}
	return roleNames[r]
}

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool { return r >= RoleViewer && r <= RoleAdmin }

// Allows reports whether an operator of role r may do what needs role need.
func (r Role) Allows(need Role) bool { return r.Valid() && need.Valid() && r >= need }

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for r := RoleViewer; r <= RoleAdmin; r++ {
		if roleNames[r] == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown role %q: must be %s", s, RoleNames)
}

// Actor is the operator making a write, as the history and the audit log record it.
type Actor struct {
	Name string
	Role Role
}

// ForbiddenError is a request refused because the operator's role does not allow it. Its message
// names what was refused, the role it needs and the operator's role.
type ForbiddenError struct {
	Actor  Actor
	Needed Role
	What   string // "publishing a draft", "reloading the cache"...
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("%s needs the %s role; %s is %s %s", e.What, e.Needed, e.Actor.Name, article(e.Actor.Role), e.Actor.Role)
}

// Code is forbidden: the answer names the role needed.
func (e *ForbiddenError) Code() Code { return CodeForbidden }

// article is "an" before a role that starts with a vowel, "a" otherwise.
func article(r Role) string {
	if r == RoleEditor || r == RoleAdmin {
		return "an"
	}
	return "a"
}

// Need returns nil when the actor's role allows what needs role need, else a *ForbiddenError
// saying what.
func (a Actor) Need(need Role, what string) error {
	if a.Role.Allows(need) {
		return nil
	}
	return &ForbiddenError{Actor: a, Needed: need, What: what}
}

// May returns nil when the actor's role allows write w (Write.Needs), else a *ForbiddenError.
func (a Actor) May(w Write) error {
	need, what := w.Needs()
	return a.Need(need, what)
}

// Write is one popup write as the rights rule sees it.
type Write struct {
	Action ChangeKind
	// Before is the stored popup's status (an update, archive or rollback): the write reads it
	// in its transaction, with the row locked, so it cannot change before the write.
	Before Status
	// After is the status the write leaves (a create or an update).
	After  Status
	DryRun bool // an import that writes nothing
}

// Needs is the rights rule of popup writes: the least role that may make w, and what w is in the
// words of a refusal. Creating a draft and editing a draft that stays a draft are an editor's;
// anything that makes or changes a live popup (any status change, an edit of a popup that is
// not a draft, archive, rollback, import) is a publisher's; a dry-run import is an editor's. An
// experiment transition needs what an update of the popup that keeps its status needs.
func (w Write) Needs() (Role, string) {
	switch w.Action {
	case ChangeCreate:
		if w.After == StatusDraft {
			return RoleEditor, "creating a draft"
		}
		return RolePublisher, fmt.Sprintf("creating a popup with status %s", w.After)
	case ChangeUpdate:
		switch {
		case w.Before == StatusDraft && w.After == StatusDraft:
			return RoleEditor, "editing a draft"
		case w.Before == StatusDraft:
			return RolePublisher, fmt.Sprintf("changing a draft's status to %s", w.After)
		}
		return RolePublisher, fmt.Sprintf("changing a popup that is %s", w.Before)
	case ChangeImport:
		if w.DryRun {
			return RoleEditor, "a dry-run import"
		}
		return RolePublisher, "importing popups"
	case ChangeExperimentStart, ChangeExperimentStop, ChangeExperimentConclude:
		// As an update of the popup that leaves its status: an editor's while it is a draft.
		what := transitionVerbs[w.Action] + " the experiment of a popup that is " + string(w.Before)
		if w.Before == StatusDraft {
			return RoleEditor, what
		}
		return RolePublisher, what
	case ChangeArchive:
		return RolePublisher, "archiving a popup"
	case ChangeRollback:
		return RolePublisher, "rolling back a popup"
	}
	return RoleAdmin, "writing a popup" // an action this rule does not know: the most it can need
}

// transitionVerbs say what each experiment transition does, in the words of a refusal.
var transitionVerbs = map[ChangeKind]string{ChangeExperimentStart: "starting", ChangeExperimentStop: "stopping", ChangeExperimentConclude: "concluding"}
