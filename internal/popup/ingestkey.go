package popup

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// IngestKey is a server-to-server credential (docs/CONTRACT.md §14, "Ingest"): a backend sends
// it as a bearer token with conversions that carry a value, which no client without it can send.
// An admin creates and revokes it; only its SHA-256 is stored (the secret is shown once, at
// creation), with who created and who revoked it.
type IngestKey struct {
	ID          int64
	Name        string
	Prefix      string // the secret's first characters, to tell keys apart
	CreatedAt   time.Time
	CreatedBy   string
	CreatedRole Role
	RevokedAt   *time.Time // nil: active
	RevokedBy   string
	RevokedRole Role
}

// IngestKeyPrefix leads every ingest key's secret, so a leaked one is recognised as such.
const IngestKeyPrefix = "pik_"

// ingestKeyPrefixLen is how much of a secret IngestKey.Prefix keeps: "pik_" and 8 hex digits.
const ingestKeyPrefixLen = len(IngestKeyPrefix) + 8

// NewIngestKeySecret draws a new secret (32 random bytes, hex) and returns it with its hash and
// the prefix a key keeps of it.
func NewIngestKeySecret() (secret, prefix string, hash [32]byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	secret = IngestKeyPrefix + hex.EncodeToString(b)
	return secret, secret[:ingestKeyPrefixLen], HashIngestKey(secret)
}

// HashIngestKey is what the store keeps of a secret. The secrets are 256 random bits, so a plain
// SHA-256 cannot be searched backwards.
func HashIngestKey(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// LooksLikeIngestKey reports whether s has the shape of a secret NewIngestKeySecret draws.
func LooksLikeIngestKey(s string) bool {
	if !strings.HasPrefix(s, IngestKeyPrefix) || len(s) != len(IngestKeyPrefix)+64 {
		return false
	}
	_, err := hex.DecodeString(s[len(IngestKeyPrefix):])
	return err == nil
}

// ValidateIngestKeyName checks a key's name: 1-100 characters, not only spaces.
func ValidateIngestKeyName(name string) *ValidationError {
	if strings.TrimSpace(name) == "" || len([]rune(name)) > 100 {
		return &ValidationError{Of: "ingest key", Fields: []FieldError{{Field: "name", Message: "must be 1 to 100 characters, not only spaces"}}}
	}
	return nil
}

// CodeIngestKeyNotFound is the code of ErrIngestKeyNotFound.
const CodeIngestKeyNotFound Code = "ingest_key_not_found"

// ErrIngestKeyNotFound is what a store returns for an ingest key it does not hold.
var ErrIngestKeyNotFound error = &Error{code: CodeIngestKeyNotFound, msg: "ingest key not found", answer: "no such ingest key"}
