// Package audiencelist is an operator's audience as the admin API and its store see it: the
// record and its history, the limits of a member upload and the formats an upload comes in
// (text/plain, text/csv). The in-process member set the decision reads is internal/audience's.
package audiencelist

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// Limits of a member write (docs/CONTRACT.md §11).
const (
	// MaxReplace is the most distinct uids a replace of the whole list may hold.
	MaxReplace = 20_000_000
	// MaxDelta is the most distinct uids an add or a remove may hold.
	MaxDelta = 1_000_000
	// MaxNameLen and MaxDescriptionLen bound the metadata, in characters.
	MaxNameLen        = 100
	MaxDescriptionLen = 1000
	// MaxReportedLines is how many bad lines a refused upload names (it counts them all).
	MaxReportedLines = 100
)

// Audience is an audience's record: its metadata and the state of its member list.
type Audience struct {
	ID          int64
	Name        string
	Description string
	// Size is the number of distinct members.
	Size int64
	// Version increases with every write of the audience (metadata or members): the ETag.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Key keys the members' fingerprints: drawn at creation, never changed, never shown.
	Key audience.Key
}

// Meta is what an operator sets of an audience besides its members.
type Meta struct {
	Name        string
	Description string
}

// Validate checks the metadata: a name of 1-100 characters, a description of at most 1000.
func (m Meta) Validate() error {
	var fields []popup.FieldError
	if n := utf8.RuneCountInString(m.Name); n == 0 || n > MaxNameLen || strings.TrimSpace(m.Name) == "" {
		fields = append(fields, popup.FieldError{Field: "name", Message: "must be 1-" + strconv.Itoa(MaxNameLen) + " characters, not only spaces"})
	}
	if !utf8.ValidString(m.Name) || !utf8.ValidString(m.Description) {
		fields = append(fields, popup.FieldError{Field: "name", Message: "must be valid UTF-8"})
	}
	if utf8.RuneCountInString(m.Description) > MaxDescriptionLen {
		fields = append(fields, popup.FieldError{Field: "description", Message: "must be at most " + strconv.Itoa(MaxDescriptionLen) + " characters"})
	}
	if len(fields) > 0 {
		return &popup.ValidationError{Fields: fields}
	}
	return nil
}

// Action is what one write did to an audience, as its history records it.
type Action string

// The actions of the history.
const (
	ActionCreate  Action = "create"
	ActionUpdate  Action = "update" // name or description
	ActionReplace Action = "replace"
	ActionAdd     Action = "add"
	ActionRemove  Action = "remove"
	ActionDelete  Action = "delete"
)

// Members reports whether the action is a member write (one that uploads a list).
func (a Action) Members() bool { return a == ActionReplace || a == ActionAdd || a == ActionRemove }

// Limit is the most distinct uids an upload of the action may hold.
func (a Action) Limit() int {
	if a == ActionReplace {
		return MaxReplace
	}
	return MaxDelta
}

// Change is one write of an audience: a version of its history and an audit entry. It never
// holds the uids.
type Change struct {
	AudienceID int64
	Version    int64
	At         time.Time
	Actor      popup.Actor
	Action     Action
	// Upload is the member upload the write committed (0: none, a metadata write).
	Upload int64
	// Added and Removed are the members the write really added and removed; Size is the number
	// of members after it.
	Added, Removed int64
	Size           int64
}

// MemberWrite is what a member write did: the audience as it left it, the uids read (lines that
// held one, repeats included) and the members it really added and removed.
type MemberWrite struct {
	Audience       Audience
	Lines          int
	Added, Removed int64
}

// UsedBy is a popup that targets an audience (include or exclude), with its status.
type UsedBy struct {
	ID     int64
	Name   string
	Status popup.Status
}

// Live reports whether the popup is served or may be resumed (active or paused): changing the
// members of an audience it uses changes who sees it.
func (u UsedBy) Live() bool { return u.Status == popup.StatusActive || u.Status == popup.StatusPaused }

// LineError is one bad line of an upload.
type LineError struct {
	Line    int
	Message string
}

// InvalidMembersError refuses an upload that has bad lines: nothing of it is written.
type InvalidMembersError struct {
	// Lines are the first MaxReportedLines bad lines; Total counts them all.
	Lines []LineError
	Total int
}

func (e *InvalidMembersError) Error() string {
	if len(e.Lines) == 0 {
		return "invalid members"
	}
	return fmt.Sprintf("%d bad lines, the first line %d: %s", e.Total, e.Lines[0].Line, e.Lines[0].Message)
}

// Code is invalid_members.
func (e *InvalidMembersError) Code() popup.Code { return popup.CodeInvalidMembers }

// Message is what the answer says.
func (e *InvalidMembersError) Message() string {
	return fmt.Sprintf("upload refused, nothing changed: %d bad lines (the first %d are listed); each line must be one uid of 1-64 characters of A-Za-z0-9_.:-",
		e.Total, len(e.Lines))
}

// TooManyMembersError refuses an upload of more distinct uids than its action allows.
type TooManyMembersError struct {
	Action Action
	Limit  int
}

func (e *TooManyMembersError) Error() string {
	return fmt.Sprintf("%s: more than %d distinct uids", e.Action, e.Limit)
}

// Code is too_many_members.
func (e *TooManyMembersError) Code() popup.Code { return popup.CodeTooManyMembers }

// MemoryError refuses a member write that would take every audience's set past the memory every
// instance may hold for them (POPUP_AUDIENCE_MEMORY).
type MemoryError struct {
	// Members is the number of members of every audience the write would leave; Need the bytes
	// their sets take, Budget POPUP_AUDIENCE_MEMORY.
	Members     int64
	Need, Limit int64
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("every audience's members would be %d, whose sets take %d bytes, over POPUP_AUDIENCE_MEMORY (%d bytes)", e.Members, e.Need, e.Limit)
}

// Code is audience_memory.
func (e *MemoryError) Code() popup.Code { return popup.CodeAudienceMemory }

// InUseError refuses to delete an audience that live popups use.
type InUseError struct {
	Popups []UsedBy // the live ones, by id
}

func (e *InUseError) Error() string {
	ids := make([]string, len(e.Popups))
	for i, p := range e.Popups {
		ids[i] = strconv.FormatInt(p.ID, 10)
	}
	return "the audience is used by live popups " + strings.Join(ids, ", ") + ": archive them or remove the audience from their targeting first"
}

// Code is audience_in_use.
func (e *InUseError) Code() popup.Code { return popup.CodeAudienceInUse }
