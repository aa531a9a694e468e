// Package privacy is the erasure and access of one user's data (docs/CONTRACT.md §12): the keyed
// hash that names an erased uid without holding it, the tombstone rule that keeps an erased
// user's earlier events out, and the use cases that erase (Eraser, run by popup-worker) and
// export (Exporter, on the admin API) a user.
package privacy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"
)

// MinKeyLen is the shortest POPUP_PRIVACY_KEY accepted, in bytes (openssl rand -hex 32 gives 64).
const MinKeyLen = 32

// Window is how long an erased uid's tombstone is kept after its erasure: at least the API's
// de-duplication window (redisstore.RetryWindow; the previous release's markers lived a day,
// redisstore.EventIDTTL). A client retrying an event the service had accepted before the erasure
// is refused within it; after it, a retry is indistinguishable from a new action and counts as
// the new user's.
const Window = 24 * time.Hour

// ClockSkew is how far the clock of the popup-api that stamped an event may run ahead of the
// worker's that erased its user: the cut-off of a tombstone is the end of the erasure's Redis
// step plus this, so an event queued before it is dropped even when its instance's clock is
// ahead (a new visit in these first seconds is dropped as well, see Tombstone).
const ClockSkew = 2 * time.Second

// Keyed computes the keyed hashes of uids and seals the uid of a pending erasure, all under
// POPUP_PRIVACY_KEY. A hash says whether two requests name the same uid; without the key it
// tells nothing about the uid (HMAC-SHA256). Safe for concurrent use.
type Keyed struct {
	pool sync.Pool // of keyed hash.Hash
	aead cipher.AEAD
}

// ErrKey is a POPUP_PRIVACY_KEY too short to use.
var ErrKey = fmt.Errorf("privacy key: must be at least %d bytes", MinKeyLen)

// NewKeyed returns the hashes and seal of key, used as written (at least MinKeyLen bytes).
func NewKeyed(key string) (*Keyed, error) {
	if len(key) < MinKeyLen {
		return nil, ErrKey
	}
	k := &Keyed{}
	k.pool.New = func() any { return hmac.New(sha256.New, []byte(key)) }
	// The seal's key is derived, so that a hash never equals a sealing key's material.
	sealKey := hmac.New(sha256.New, []byte(key))
	sealKey.Write([]byte("popup privacy seal v1"))
	block, err := aes.NewCipher(sealKey.Sum(nil))
	if err != nil {
		return nil, err
	}
	if k.aead, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	return k, nil
}

// sum is hex(HMAC(key, kind || 0 || parts joined by '/')).
func (k *Keyed) sum(kind string, parts ...string) string {
	h := k.pool.Get().(hash.Hash)
	defer k.pool.Put(h)
	h.Reset()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{'/'})
		}
		h.Write([]byte(p))
	}
	var out [sha256.Size]byte
	return hex.EncodeToString(h.Sum(out[:0]))
}

// UID is the keyed hash of uid: 64 hex characters, what tombstones and the erasure's audit
// record hold instead of the uid.
func (k *Keyed) UID(uid string) string { return k.sum("uid", uid) }

// Event is the keyed hash of uid's event id: what stands for the event-id marker of an erased
// user (a retry of that event is refused as a duplicate). '/' is not in either alphabet.
func (k *Keyed) Event(uid, eventID string) string { return k.sum("event", uid, eventID) }

// MarkerKey keys the fingerprints by which popup-api remembers event ids (redisstore): derived
// from the key, so that without it a fingerprint tells nothing about the uid.
func (k *Keyed) MarkerKey() [16]byte {
	var out [16]byte
	raw, _ := hex.DecodeString(k.sum("marker key v1")[:32]) // sum is hex: never fails
	copy(out[:], raw)
	return out
}

// Seal encrypts uid (AES-GCM, random nonce) for the pending erasure's record.
func (k *Keyed) Seal(uid string) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(uid)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return k.aead.Seal(nonce, nonce, []byte(uid), []byte("uid")), nil
}

// ErrSealed is a sealed uid that does not open under this key (another key, or damaged).
var ErrSealed = errors.New("sealed uid does not open under POPUP_PRIVACY_KEY")

// Open decrypts what Seal made.
func (k *Keyed) Open(sealed []byte) (string, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return "", ErrSealed
	}
	uid, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte("uid"))
	if err != nil {
		return "", ErrSealed
	}
	return string(uid), nil
}

// Tombstone is what the worker knows of an erased uid: drop its events stamped before Cutoff,
// or all of them while Cutoff is zero (the erasure is running).
//
// An event's time (At) is fixed when popup-api queues it, so an event queued before the erasure
// always carries a time before the cut-off (the end of the erasure's Redis step plus ClockSkew),
// however late the worker reaches it; a new visit of the same uid after that is stamped later and
// is written, as a new user's. A client's retry of an old action is stamped when it arrives, so
// the time cannot tell it: the erased user's event-id markers are replaced by keyed hashes of
// them (Keyed.Event) that popup-api refuses as duplicates for the rest of the window.
type Tombstone struct {
	UIDHash string
	Cutoff  time.Time // zero: the erasure is running
}

// Drops reports whether an event of the tombstone's uid stamped at is to be dropped.
func (t Tombstone) Drops(at time.Time) bool { return t.Cutoff.IsZero() || at.Before(t.Cutoff) }

// Status is an erasure's progress.
type Status string

// The statuses of docs/CONTRACT.md §12.
const (
	Pending Status = "pending"
	Done    Status = "done"
)

// Erasure is one erasure request as its status answers it.
type Erasure struct {
	ID          string
	Status      Status
	RequestedAt time.Time
	DoneAt      time.Time // zero while pending
	// Removed counts what each store lost (rows, keys, events, memberships), by the store's name.
	Removed map[string]int64
}

// The stores an erasure reports in Erasure.Removed.
const (
	StoreRedisState      = "redis_user_state"      // the user's state and action rate counter keys
	StoreRedisMarkers    = "redis_event_markers"   // per-event "applied once" markers
	StoreRedisQueue      = "redis_queue"           // events still queued or dead-lettered
	StoreUserState       = "popup_user_state"      // rows
	StoreActionLog       = "popup_action_log"      // rows
	StoreExperimentUser  = "popup_experiment_user" // rows
	StoreAudiences       = "audience_members"      // audiences the uid was removed from (each a new version)
	StoreAudienceUploads = "audience_uids"         // upload rows the uid was cut out of
)

// ErrNotFound is an erasure id no request made.
var ErrNotFound = errors.New("erasure not found")

// ErrNotConfigured is an erasure asked of a deployment without POPUP_PRIVACY_KEY.
var ErrNotConfigured = errors.New("POPUP_PRIVACY_KEY is not set: erasures are off")

// NewID returns a random erasure id: 32 hex characters.
func NewID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidID reports whether s can be an erasure id.
func ValidID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
