package popup

import "errors"

// ErrNotFound is what every store returns for a popup or a user state it does not hold.
var ErrNotFound = errors.New("not found")
