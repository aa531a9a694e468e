package popup

import (
	"errors"
	"time"
)

// ErrNameTaken is what a store returns when a write would give two non-archived popups the same
// name (an import matches popups by name, so a live name is unique).
var ErrNameTaken = errors.New("name taken")

// ErrRevisionNotKept is what a store returns for a rollback to a revision the popup never had.
var ErrRevisionNotKept = errors.New("no such revision")

// Action is what a write did to a popup, as the audit log records it.
type Action string

// The actions of the audit log.
const (
	ActionCreate   Action = "create"
	ActionUpdate   Action = "update"
	ActionArchive  Action = "archive"
	ActionRollback Action = "rollback"
	ActionImport   Action = "import"
)

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
	Action   Action
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

// ListQuery selects popups in id order: with one status (when set; archived ones only when
// Status is archived or IncludeArchived), whose name contains NameContains (case-insensitive),
// with an id above After, at most Limit.
type ListQuery struct {
	Status          Status
	IncludeArchived bool
	NameContains    string
	After           int64
	Limit           int
}

// ImportResult counts what an import did (or, in a dry run, would do).
type ImportResult struct {
	Created, Updated, Unchanged int
}
