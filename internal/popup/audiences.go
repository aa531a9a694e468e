package popup

// Audiences: an operator's uploaded list of users as the admin API and its store see it (the
// record and its history, the limits of a member upload and its errors). The in-process member
// set the decision reads is internal/audience's; popups name audiences in Targeting.Audiences.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"popupsvc/internal/audience"
)

// Limits of a member write (docs/CONTRACT.md §11).
const (
	// MaxReplaceMembers is the most distinct uids a replace of the whole list may hold.
	MaxReplaceMembers = 20_000_000
	// MaxDeltaMembers is the most distinct uids an add or a remove may hold.
	MaxDeltaMembers = 1_000_000
	// MaxAudienceNameLen and MaxDescriptionLen bound the metadata, in characters.
	MaxAudienceNameLen        = 100
	MaxAudienceDescriptionLen = 1000
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

// AudienceMeta is what an operator sets of an audience besides its members.
type AudienceMeta struct {
	Name        string
	Description string
}

// Validate checks the metadata: a name of 1-100 characters, a description of at most 1000.
func (m AudienceMeta) Validate() error {
	var fields []FieldError
	if n := utf8.RuneCountInString(m.Name); n == 0 || n > MaxAudienceNameLen || strings.TrimSpace(m.Name) == "" {
		fields = append(fields, FieldError{Field: "name", Message: "must be 1-" + strconv.Itoa(MaxAudienceNameLen) + " characters, not only spaces"})
	}
	if !utf8.ValidString(m.Name) || !utf8.ValidString(m.Description) {
		fields = append(fields, FieldError{Field: "name", Message: "must be valid UTF-8"})
	}
	if utf8.RuneCountInString(m.Description) > MaxAudienceDescriptionLen {
		fields = append(fields, FieldError{Field: "description", Message: "must be at most " + strconv.Itoa(MaxAudienceDescriptionLen) + " characters"})
	}
	if len(fields) > 0 {
		return &ValidationError{Fields: fields, Of: "audience"}
	}
	return nil
}

// AudienceAction is what one write did to an audience, as its history records it.
type AudienceAction string

// The actions of the history.
const (
	AudienceCreate  AudienceAction = "create"
	AudienceUpdate  AudienceAction = "update" // name or description
	AudienceReplace AudienceAction = "replace"
	AudienceAdd     AudienceAction = "add"
	AudienceRemove  AudienceAction = "remove"
	AudienceDelete  AudienceAction = "delete"
)

// Members reports whether the action is a member write (one that uploads a list).
func (a AudienceAction) Members() bool {
	return a == AudienceReplace || a == AudienceAdd || a == AudienceRemove
}

// Limit is the most distinct uids an upload of the action may hold.
func (a AudienceAction) Limit() int {
	if a == AudienceReplace {
		return MaxReplaceMembers
	}
	return MaxDeltaMembers
}

// AudienceChange is one write of an audience: a version of its history and an audit entry. It never
// holds the uids.
type AudienceChange struct {
	AudienceID int64
	Version    int64
	At         time.Time
	Actor      Actor
	Action     AudienceAction
	// Upload is the member upload the write committed (0: none, a metadata write).
	Upload int64
	// Added and Removed are the members the write really added and removed; Size is the number
	// of members after it.
	Added, Removed int64
	Size           int64
}

// MemberWrite is what a member write did: the audience as it left it, the uids read (lines that
// held one, repeats included), how many of those repeated a uid read before, and the members it
// really added and removed.
type MemberWrite struct {
	Audience       Audience
	Lines          int
	Duplicates     int
	Added, Removed int64
}

// AudienceUser is a popup that targets an audience (include or exclude), with its status.
type AudienceUser struct {
	ID     int64
	Name   string
	Status Status
}

// Live reports whether the popup is served or may be resumed (active or paused): changing the
// members of an audience it uses changes who sees it.
func (u AudienceUser) Live() bool { return u.Status == StatusActive || u.Status == StatusPaused }

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
	// Columns are a CSV header's columns when none is the uid column.
	Columns []string
}

func (e *InvalidMembersError) Error() string {
	if len(e.Lines) == 0 {
		return "invalid members"
	}
	return fmt.Sprintf("%d bad lines, the first line %d: %s", e.Total, e.Lines[0].Line, e.Lines[0].Message)
}

// Code is invalid_members.
func (e *InvalidMembersError) Code() Code { return CodeInvalidMembers }

// Message is what the answer says.
func (e *InvalidMembersError) Message() string {
	if e.Columns != nil && len(e.Lines) == 1 { // the header is the one problem: say it alone
		return "upload refused, nothing changed: " + e.Lines[0].Message
	}
	return fmt.Sprintf("upload refused, nothing changed: %d bad lines (the first %d are listed); each line must be one uid of 1-64 characters of A-Za-z0-9_.:-",
		e.Total, len(e.Lines))
}

// TooManyMembersError refuses an upload of more distinct uids than its action allows.
type TooManyMembersError struct {
	Action AudienceAction
	Limit  int
}

func (e *TooManyMembersError) Error() string {
	return fmt.Sprintf("%s: more than %d distinct uids", e.Action, e.Limit)
}

// Code is too_many_members.
func (e *TooManyMembersError) Code() Code { return CodeTooManyMembers }

// AudienceMemoryError refuses a member write that would take every audience's set past the memory every
// instance may hold for them (POPUP_AUDIENCE_MEMORY).
type AudienceMemoryError struct {
	// Members is the number of members of every audience the write would leave; Need the bytes
	// their sets take, Budget POPUP_AUDIENCE_MEMORY.
	Members     int64
	Need, Limit int64
}

func (e *AudienceMemoryError) Error() string {
	return fmt.Sprintf("every audience's members would be %d, whose sets take %d bytes, over POPUP_AUDIENCE_MEMORY (%d bytes)", e.Members, e.Need, e.Limit)
}

// Code is audience_memory.
func (e *AudienceMemoryError) Code() Code { return CodeAudienceMemory }

// AudienceInUseError refuses to delete an audience that live popups use.
type AudienceInUseError struct {
	Popups []AudienceUser // the live ones, by id
}

func (e *AudienceInUseError) Error() string {
	ids := make([]string, len(e.Popups))
	for i, p := range e.Popups {
		ids[i] = strconv.FormatInt(p.ID, 10)
	}
	return "the audience is used by live popups " + strings.Join(ids, ", ") + ": archive them or remove the audience from their targeting first"
}

// Code is audience_in_use.
func (e *AudienceInUseError) Code() Code { return CodeAudienceInUse }

// MemberLines yields the uids of an upload as it streams in, each with its line number (from 1), blank
// lines skipped. The uid is valid until the next call; io.EOF ends the upload. A *SyntaxError is
// an upload that cannot be read further (a CSV without a uid column, a broken quote).
type MemberLines interface {
	Next() (uid []byte, line int, err error)
}

// MemberSyntaxError is an upload whose format breaks at a line: nothing after it can be read.
type MemberSyntaxError struct {
	Line    int
	Message string
	// Columns are a CSV header's columns when none is the uid column.
	Columns []string
}

func (e *MemberSyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Message) }
