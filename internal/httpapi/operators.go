package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"regexp"

	"github.com/gin-gonic/gin"
)

// Operator is one named holder of an admin token: every write is attributed to its name.
type Operator struct {
	Name  string
	Token string
}

// AdminOperator is the name of the operator whose token is POPUP_ADMIN_TOKEN.
const AdminOperator = "admin"

var operatorName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidOperatorName reports whether s may name an operator: 1-64 characters of [A-Za-z0-9_.-].
func ValidOperatorName(s string) bool { return operatorName.MatchString(s) }

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
	names := map[string]bool{}
	tokens := map[string]bool{}
	keys := make([]operatorKey, 0, len(ops))
	for i, op := range ops {
		switch {
		case !ValidOperatorName(op.Name):
			return nil, fmt.Errorf("operator %d: name must be 1-64 characters of [A-Za-z0-9_.-]", i+1)
		case op.Token == "":
			return nil, fmt.Errorf("operator %q: empty token", op.Name)
		case names[op.Name]:
			return nil, fmt.Errorf("operator %q: named twice", op.Name)
		case tokens[op.Token]:
			return nil, fmt.Errorf("operator %q: shares its token with another operator", op.Name)
		}
		names[op.Name], tokens[op.Token] = true, true
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
