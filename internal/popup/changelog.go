package popup

import "time"

// ChangeResource names what a change of the audit log (GET /admin/v1/audit?resource=) was made
// to, besides popups, whose audit entries carry the popup itself (AuditEntry).
type ChangeResource string

// The resources of the audit log's changes.
const (
	ChangeAudiences ChangeResource = "audiences"
	ChangeGoals     ChangeResource = "goals"
	ChangeSettings  ChangeResource = "settings"
	ChangeHoldout   ChangeResource = "holdout"
)

// ChangeResources are the resources of ResourceChange, in the order the contract lists them.
var ChangeResources = []ChangeResource{ChangeAudiences, ChangeGoals, ChangeSettings, ChangeHoldout}

// ResourceChangeQuery selects changes of one resource, newest first: by Actor when set, those before
// the change of id Before when set, at most Limit.
type ResourceChangeQuery struct {
	Resource ChangeResource
	Actor    string
	Before   int64
	Limit    int
}

// ResourceChange is one recorded change of an audience, a goal, a setting or the holdout. ID
// orders the changes of its resource (a later change has a larger one). Subject is what was
// changed: the audience's id, the goal's key, the setting's name or the holdout phase's number.
type ResourceChange struct {
	ID       int64
	Resource ChangeResource
	At       time.Time
	Actor    Actor
	Action   string
	Subject  string
	// Version is the audience's or goal's version the change wrote (0 for the others).
	Version int64
	// Added, Removed and Size are an audience change's members (Size after it).
	Added, Removed, Size int64
	// Before and After are a setting's values around the change (Before nil: never set), or the
	// holdout's percentage (After of a phase's start, Before of its end).
	Before, After *string
}
