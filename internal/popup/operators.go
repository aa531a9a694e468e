package popup

import (
	"fmt"
	"strings"
)

// OperatorNameRule describes a well-formed operator name (ValidOperatorName) in the words every
// error message uses.
const OperatorNameRule = "1-64 characters of [A-Za-z0-9_.-]"

// ValidOperatorName reports whether s may name an admin operator (OperatorNameRule): the actor
// of every change in the history and the audit log.
func ValidOperatorName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// OperatorSyntax is the form of one operator entry (ParseOperator), in the words every error
// message uses.
const OperatorSyntax = "name:token or name@role:token"

// ParseOperator reads one operator entry, name:token or name@role:token (POPUP_ADMIN_TOKENS, a
// line of POPUP_ADMIN_TOKENS_FILE). The token is everything after the first ':' (it may hold
// more); '@' cannot occur in a name, so name@role is unambiguous; without @role the role is
// DefaultRole. Spaces around the name, the role and the token are ignored. An unknown role's
// error quotes the entry without its token ("alice@boss"); errors never quote a token. The name
// and the token are checked by Operators.Add.
func ParseOperator(entry string) (name string, role Role, token string, err error) {
	head, token, ok := strings.Cut(entry, ":")
	if !ok {
		return "", 0, "", fmt.Errorf("not an operator entry (%s)", OperatorSyntax)
	}
	head = strings.TrimSpace(head)
	name, roleName, hasRole := strings.Cut(head, "@")
	name, token, role = strings.TrimSpace(name), strings.TrimSpace(token), DefaultRole
	if hasRole {
		if role, err = ParseRole(strings.TrimSpace(roleName)); err != nil {
			return "", 0, "", fmt.Errorf("operator %q: %w", head, err)
		}
	}
	return name, role, token, nil
}

// Operators checks a list of admin operators as it is built, the one rule for the config and the
// admin API: a valid name, a role, a non-empty token, no name and no token twice. The zero value
// is ready to use.
type Operators struct {
	names, tokens map[string]bool
}

// Add accepts one more operator, or says what is wrong with it (never quoting a token).
func (o *Operators) Add(name string, role Role, token string) error {
	if o.names == nil {
		o.names, o.tokens = map[string]bool{}, map[string]bool{}
	}
	switch {
	case !ValidOperatorName(name):
		return fmt.Errorf("operator name must be %s", OperatorNameRule)
	case !role.Valid():
		return fmt.Errorf("operator %q has no role: must be %s", name, RoleNames)
	case token == "":
		return fmt.Errorf("operator %q has an empty token", name)
	case o.names[name]:
		return fmt.Errorf("operator %q is named twice", name)
	case o.tokens[token]:
		return fmt.Errorf("operator %q has the token of another operator", name)
	}
	o.names[name], o.tokens[token] = true, true
	return nil
}
