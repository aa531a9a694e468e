package operator

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"

	"popupsvc/internal/popup"
)

// Keys are the operators' tokens as the admin API's auth check compares them: each token's
// SHA-256, so every comparison is of 32 bytes whatever the tokens' lengths, with the operator it
// names. The zero value matches no token.
type Keys struct {
	keys []key
}

type key struct {
	actor popup.Actor
	sum   [sha256.Size]byte
}

// NewKeys checks the operators (Set: named, with a role, unique names and tokens, non-empty
// tokens) and hashes their tokens. An error names the operator's position, never a token.
func NewKeys(ops []Operator) (Keys, error) {
	var check Set
	keys := make([]key, 0, len(ops))
	for i, op := range ops {
		if err := check.Add(op); err != nil {
			return Keys{}, fmt.Errorf("operator %d: %w", i+1, err)
		}
		keys = append(keys, key{actor: popup.Actor{Name: op.Name, Role: op.Role}, sum: sha256.Sum256([]byte(op.Token))})
	}
	return Keys{keys: keys}, nil
}

// Match returns the operator whose token is given, in constant time (match).
func (k Keys) Match(given string) (popup.Actor, bool) {
	return k.match(given, subtle.ConstantTimeCompare)
}

// match returns the operator whose token is given. It compares against every key, whether or
// not an earlier one matched, each comparison in constant time (eq is
// subtle.ConstantTimeCompare; a test counts its calls), so the time taken says nothing about
// which token, or how much of one, matched.
func (k Keys) match(given string, eq func(x, y []byte) int) (popup.Actor, bool) {
	sum := sha256.Sum256([]byte(given))
	found := -1
	for i := range k.keys {
		found = subtle.ConstantTimeSelect(eq(sum[:], k.keys[i].sum[:]), i, found)
	}
	if found < 0 {
		return popup.Actor{}, false
	}
	return k.keys[found].actor, true
}

// Actors are the operators, each with its role, in the order NewKeys was given them; never a
// token.
func (k Keys) Actors() []popup.Actor {
	out := make([]popup.Actor, len(k.keys))
	for i := range k.keys {
		out[i] = k.keys[i].actor
	}
	return out
}
