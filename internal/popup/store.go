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
	Busy                       // a reservation of the user's is pending: nothing reserved
	Expired                    // no pending reservation names the decision: nothing done
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
