package popup

import "errors"

// ErrNotFound is what every store returns for a popup or a user state it does not hold.
var ErrNotFound = errors.New("not found")

// ErrRevisionMismatch is what a store returns when a conditional write finds the popup at another
// revision than the one the caller last read: someone else wrote it in between.
var ErrRevisionMismatch = errors.New("revision does not match")
