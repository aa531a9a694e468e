package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
)

func TestRouterRefusesToStartWithoutATokenOrWithADuplicate(t *testing.T) {
	t.Parallel()
	_, err := (&Admin{}).Router()
	require.ErrorIs(t, err, ErrNoToken)
	_, err = (&Admin{Token: "t", Operators: []operator.Operator{{Name: "admin", Role: popup.RoleViewer, Token: "u"}}}).Router()
	require.ErrorContains(t, err, "named twice")
}
