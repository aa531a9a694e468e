package popup

import (
	"fmt"
	"strings"
)

// Code is the stable name of the rule a refused request broke: the "code" of the API's error
// answer (docs/CONTRACT.md), which clients branch on, so a shipped code never changes. Several
// errors may share one (validation_failed). The transport maps each code to its status, so a new
// error with an existing code needs no change there.
type Code string

// The codes of the domain errors.
const (
	CodePopupNotFound       Code = "popup_not_found"
	CodeRevisionMismatch    Code = "precondition_failed"
	CodeRevisionNotKept     Code = "revision_not_found"
	CodeNameTaken           Code = "name_taken"
	CodeValidationFailed    Code = "validation_failed"
	CodeForbidden           Code = "forbidden"
	CodeExperimentMissing   Code = "experiment_missing"
	CodeExperimentConcluded Code = "experiment_concluded"
	CodeExperimentState     Code = "experiment_state"
	CodeExperimentRunning   Code = "experiment_running"
	CodeExperimentShipped   Code = "experiment_shipped"
)

// Error is a request refused by a domain rule, named by its Code. Its errors are sentinels,
// compared with errors.Is; besides the short Error text that wrapping errors and logs show, it
// holds what an API answer tells the operator (Message, FieldErrors).
type Error struct {
	code Code
	msg  string
	// field is the request field at fault, "" for none; fieldMsg what the answer says of it
	// (msg when empty).
	field    string
	fieldMsg string
	// answer is the answer's message (msg when empty), fieldSlot standing for the field's path.
	answer string
}

// fieldSlot stands for the path of the field at fault in an Error's answer.
const fieldSlot = "{field}"

func (e *Error) Error() string { return e.msg }

// Code is the stable code of the rule e stands for.
func (e *Error) Code() Code { return e.code }

// Message is what an API answer says of e. prefix is the path of the popup the error is about
// within the request: "" for the request's popup, "popups[2]." for the third of an import
// (BatchItemError).
func (e *Error) Message(prefix string) string {
	if e.answer == "" {
		return e.msg
	}
	return strings.ReplaceAll(e.answer, fieldSlot, prefix+e.field)
}

// FieldErrors names the request field at fault, under prefix as for Message; nil for none.
func (e *Error) FieldErrors(prefix string) []FieldError {
	if e.field == "" {
		return nil
	}
	msg := e.fieldMsg
	if msg == "" {
		msg = e.msg
	}
	return []FieldError{{Field: prefix + e.field, Message: msg}}
}

// ErrNotFound is what a store or the config returns for a popup it does not hold.
var ErrNotFound error = &Error{code: CodePopupNotFound, msg: "not found", answer: "no such popup"}

// ErrRevisionMismatch is what a store returns when a conditional write finds the popup at another
// revision than the one the caller last read: someone else wrote it in between. The API carries
// the revision the caller read in If-Match, as the popup's ETag.
var ErrRevisionMismatch error = &Error{code: CodeRevisionMismatch, msg: "revision does not match",
	answer: "the popup has changed since it was read: If-Match does not match its current ETag; read it again and reapply the change"}

// The codes of the audience errors (docs/CONTRACT.md §11). An audience is an uploaded list of
// users that popups target; its errors share this package's Code and Error so that the admin API
// maps them in its one table.
const (
	CodeAudienceNotFound Code = "audience_not_found"
	CodeAudienceInUse    Code = "audience_in_use"
	CodeInvalidMembers   Code = "invalid_members"
	CodeTooManyMembers   Code = "too_many_members"
	CodeAudienceMemory   Code = "audience_memory"
)

// ErrAudienceNotFound is what a store returns for an audience it does not hold (deleted or never
// created).
var ErrAudienceNotFound error = &Error{code: CodeAudienceNotFound, msg: "audience not found", answer: "no such audience"}

// ErrAudienceVersionMismatch is a conditional audience write that finds the audience at another
// version than the one If-Match names.
var ErrAudienceVersionMismatch error = &Error{code: CodeRevisionMismatch, msg: "audience version does not match",
	answer: "the audience has changed since it was read: If-Match does not match its current ETag; read it again and reapply the change"}

// ErrAudienceNameTaken is a write that would give two audiences one name.
var ErrAudienceNameTaken error = &Error{code: CodeNameTaken, msg: "audience name taken",
	answer: "another audience has this name; audience names are unique",
	field:  "name", fieldMsg: "is the name of another audience"}

// UnknownAudience is the error of a popup whose targeting names an audience that does not exist;
// field is its path within the popup (targeting.audiences.include[0]).
func UnknownAudience(field string, id int64) error {
	msg := fmt.Sprintf("audience %d does not exist", id)
	return &Error{code: CodeValidationFailed, msg: msg, field: field, answer: fieldSlot + ": " + msg}
}
