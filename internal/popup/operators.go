package popup

import "fmt"

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

// Operators checks a list of admin operators as it is built, the one rule for the config and the
// admin API: a valid name, a non-empty token, no name and no token twice. The zero value is
// ready to use.
type Operators struct {
	names, tokens map[string]bool
}

// Add accepts one more operator, or says what is wrong with it (never quoting a token).
func (o *Operators) Add(name, token string) error {
	if o.names == nil {
		o.names, o.tokens = map[string]bool{}, map[string]bool{}
	}
	switch {
	case !ValidOperatorName(name):
		return fmt.Errorf("operator name must be %s", OperatorNameRule)
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
