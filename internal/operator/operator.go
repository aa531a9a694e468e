// Package operator is who may call the admin API: the operators, each a name, a role and a
// bearer token. It reads an operator entry (name:token or name@role:token, the form of
// POPUP_ADMIN_TOKENS and POPUP_ADMIN_TOKENS_FILE), checks a list of operators (valid names,
// known roles, no name and no token twice) for the config and the admin API alike, and finds the
// operator of a request's token in constant time (Keys). It is authentication: what an operator
// is and how its token is told apart; nothing here is stored or decides a write.
//
// The roles and what each allows stay in the domain (popup.Role, popup.Actor,
// popup.ForbiddenError, popup.Write.Needs): which role a popup write needs is a rule of the
// popups' lifecycle, stated in their statuses and change kinds and decided by the store inside
// the write's transaction against the stored popup; every change record keeps its actor and
// role; and a refusal is a domain error with its stable code (popup.CodeForbidden), mapped to
// its status with the others. This package imports popup for the role, never the reverse.
package operator

import (
	"fmt"
	"strings"

	"popupsvc/internal/popup"
)

// Operator is one named holder of an admin token: every write is attributed to its name, and its
// role says what it may do (popup.Role; docs/CONTRACT.md §9).
type Operator struct {
	Name  string
	Role  popup.Role
	Token string
}

// AdminName is the name of the operator whose token is POPUP_ADMIN_TOKEN (role admin).
const AdminName = "admin"

// NameRule describes a well-formed operator name (ValidName) in the words every error message
// uses.
const NameRule = "1-64 characters of [A-Za-z0-9_.-]"

// ValidName reports whether s may name an admin operator (NameRule): the actor of every change
// in the history and the audit log.
func ValidName(s string) bool {
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

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Syntax is the form of one operator entry (Parse), in the words every error message uses.
const Syntax = "name:token or name@role:token"

// Parse reads one operator entry, name:token or name@role:token (POPUP_ADMIN_TOKENS, a line of
// POPUP_ADMIN_TOKENS_FILE). The token is everything after the first ':' (it may hold more); '@'
// cannot occur in a name, so name@role is unambiguous; without @role the role is
// popup.DefaultRole. Spaces around the name, the role and the token are ignored. An unknown
// role's error quotes the entry without its token ("alice@boss"); errors never quote a token.
// The name and the token are checked by Set.Add.
func Parse(entry string) (Operator, error) {
	head, token, ok := strings.Cut(entry, ":")
	if !ok {
		return Operator{}, fmt.Errorf("not an operator entry (%s)", Syntax)
	}
	head = strings.TrimSpace(head)
	name, roleName, hasRole := strings.Cut(head, "@")
	op := Operator{Name: strings.TrimSpace(name), Role: popup.DefaultRole, Token: strings.TrimSpace(token)}
	if hasRole {
		role, err := popup.ParseRole(strings.TrimSpace(roleName))
		if err != nil {
			return Operator{}, fmt.Errorf("operator %q: %w", head, err)
		}
		op.Role = role
	}
	return op, nil
}

// Set checks a list of admin operators as it is built, the one rule for the config and the admin
// API: a valid name, a role, a non-empty token, no name and no token twice. The zero value is
// ready to use.
type Set struct {
	names, tokens map[string]bool
}

// Add accepts one more operator, or says what is wrong with it (never quoting a token).
func (s *Set) Add(op Operator) error {
	if s.names == nil {
		s.names, s.tokens = map[string]bool{}, map[string]bool{}
	}
	switch {
	case !ValidName(op.Name):
		return fmt.Errorf("operator name must be %s", NameRule)
	case !op.Role.Valid():
		return fmt.Errorf("operator %q has no role: must be %s", op.Name, popup.RoleNames)
	case op.Token == "":
		return fmt.Errorf("operator %q has an empty token", op.Name)
	case s.names[op.Name]:
		return fmt.Errorf("operator %q is named twice", op.Name)
	case s.tokens[op.Token]:
		return fmt.Errorf("operator %q has the token of another operator", op.Name)
	}
	s.names[op.Name], s.tokens[op.Token] = true, true
	return nil
}
