package popup

import "errors"

// The user-state store contract, in the domain's words, so that the use case and the adapters
// that implement it share these values without the use case importing an adapter.

// Outcome is what a conditional write of a user's state did.
type Outcome int

// Outcomes of a conditional write.
const (
	Recorded    Outcome = iota // state written and event queued
	Conflict                   // the state changed since it was read: read again and decide again
	Duplicate                  // the event id was applied before: nothing done
	RateLimited                // the uid is over its action rate limit: nothing done
)

// StoredState is a user's state together with the exact stored value it was decoded from: a
// conditional write compares against Raw, so a concurrent change is detected.
type StoredState struct {
	UserState
	Raw string
}

// ErrStateLoad marks a failure of the durable source of user state (MySQL) behind the cache:
// it says nothing about the cache's own health, so it must not count against it.
var ErrStateLoad = errors.New("user state load failed")

// UIDRule describes a well-formed uid (ValidUID) in the words every error message uses.
const UIDRule = "1-64 characters of [A-Za-z0-9_.:-]"

// CodeRule describes a well-formed region or language code (validCode) in the words every error
// message uses.
const CodeRule = "1-16 characters of [A-Za-z0-9_-]"

// ValidRequestCode reports whether s may be a request's region or language: absent ("") or a code
// as popups list them (CodeRule).
func ValidRequestCode(s string) bool { return s == "" || validCode(s) }

// CodeKey is a region or language code as the matcher compares it: lower-cased (ASCII) and
// zero-padded to 16 bytes. ok is false for "" and for anything no popup can list.
func CodeKey(s string) (k [maxCodeLen]byte, ok bool) {
	c := toCode(s)
	return c, c != code{}
}
