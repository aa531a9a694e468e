package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/popup"
)

// Operator is one named holder of an admin token: every write is attributed to its name.
type Operator struct {
	Name  string
	Token string
}

// AdminOperator is the name of the operator whose token is POPUP_ADMIN_TOKEN.
const AdminOperator = "admin"

// operatorKey is an operator's token as the auth check compares it: its SHA-256, so every
// comparison is of 32 bytes whatever the tokens' lengths.
type operatorKey struct {
	name string
	sum  [sha256.Size]byte
}

// operatorKeys checks the operators (named, unique names and tokens, non-empty tokens) and hashes
// their tokens. No operator at all is ErrNoToken.
func operatorKeys(ops []Operator) ([]operatorKey, error) {
	if len(ops) == 0 {
		return nil, ErrNoToken
	}
	var check popup.Operators
	keys := make([]operatorKey, 0, len(ops))
	for i, op := range ops {
		if err := check.Add(op.Name, op.Token); err != nil {
			return nil, fmt.Errorf("operator %d: %w", i+1, err)
		}
		keys = append(keys, operatorKey{name: op.Name, sum: sha256.Sum256([]byte(op.Token))})
	}
	return keys, nil
}

// matchOperator returns the operator whose token is given. It compares against every key,
// whether or not an earlier one matched, each comparison in constant time (eq is
// subtle.ConstantTimeCompare; a test counts its calls), so the time taken says nothing about
// which token, or how much of one, matched.
func matchOperator(keys []operatorKey, given string, eq func(x, y []byte) int) (string, bool) {
	sum := sha256.Sum256([]byte(given))
	found := -1
	for i := range keys {
		found = subtle.ConstantTimeSelect(eq(sum[:], keys[i].sum[:]), i, found)
	}
	if found < 0 {
		return "", false
	}
	return keys[found].name, true
}

// operatorCtxKey is where auth leaves the authenticated operator's name in the gin context.
const operatorCtxKey = "popup.operator"

// operator is the name of the operator making the request (auth ran first).
func operator(c *gin.Context) string { return c.GetString(operatorCtxKey) }
