package popup

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

// BucketSeedRule describes a well-formed bucket seed (ValidBucketSeed) in the words every error
// message uses.
const BucketSeedRule = "1-64 characters of [A-Za-z0-9_-]"

// ErrBucketSeedChanged is what a write returns when it would give a stored popup another bucket
// seed: that would move users between rollout buckets, in or out of a partial rollout.
var ErrBucketSeedChanged error = &Error{code: CodeValidationFailed, msg: seedChanged,
	field: "bucket_seed", answer: fieldSlot + " " + seedChanged}

const seedChanged = "cannot change: it would move users between rollout buckets"

// ValidBucketSeed reports whether s is a well-formed bucket seed: 1-64 characters of [A-Za-z0-9_-].
func ValidBucketSeed(s string) bool { return isToken(s, 64) }

// NewBucketSeed draws a seed for a new popup: 16 lowercase hex characters from crypto/rand, so
// two popups' rollouts reach independent slices of the users.
func NewBucketSeed() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read panics rather than return an error)
	return hex.EncodeToString(b[:])
}

// RolloutSeed is the seed the popup's rollout buckets are keyed on: BucketSeed, or for a popup
// without one (cached or recorded before seeds existed) its decimal id, which is the seed
// migration 00007 stored for it.
func (p *Popup) RolloutSeed() string {
	if p.BucketSeed != "" {
		return p.BucketSeed
	}
	return strconv.FormatInt(p.ID, 10)
}

// GiveBucketSeed gives a new popup without a seed a fresh one (NewBucketSeed); a seed it has
// (a draft's, previewed already) is kept.
func (p *Popup) GiveBucketSeed() {
	if p.BucketSeed == "" {
		p.BucketSeed = NewBucketSeed()
	}
}

// KeepBucketSeed applies "a seed never changes once stored" to p, the new content of stored: p
// without a seed takes stored's; p with another one is ErrBucketSeedChanged.
func (p *Popup) KeepBucketSeed(stored Popup) error {
	seed := stored.RolloutSeed()
	switch p.BucketSeed {
	case "":
		p.BucketSeed = seed
	case seed:
	default:
		return ErrBucketSeedChanged
	}
	return nil
}

// BatchItemError is a batch write (an import) refused because of one of its popups: Index is its
// position in the batch, Err what is wrong with it.
type BatchItemError struct {
	Index int
	Err   error
}

func (e *BatchItemError) Error() string {
	return "popups[" + strconv.Itoa(e.Index) + "]: " + e.Err.Error()
}

func (e *BatchItemError) Unwrap() error { return e.Err }
