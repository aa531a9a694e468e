package httpapi

import (
	"crypto/subtle"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestMatchOperatorComparesEveryTokenWithoutEarlyExit(t *testing.T) {
	t.Parallel()
	keys, err := operatorKeys([]Operator{{"alice", popup.RoleViewer, "tok-a"}, {"bob", popup.RoleEditor, "tok-b"},
		{"carol", popup.RoleAdmin, "a-much-longer-token-of-carol"}})
	require.NoError(t, err)
	tests := []struct {
		give      string
		wantActor popup.Actor
		wantOK    bool
	}{
		{"tok-a", popup.Actor{Name: "alice", Role: popup.RoleViewer}, true}, // the first key matches: the others are compared all the same
		{"tok-b", popup.Actor{Name: "bob", Role: popup.RoleEditor}, true},
		{"a-much-longer-token-of-carol", popup.Actor{Name: "carol", Role: popup.RoleAdmin}, true},
		{"tok-", popup.Actor{}, false},
		{"", popup.Actor{}, false},
		{"tok-a ", popup.Actor{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			calls := 0
			eq := func(x, y []byte) int {
				calls++
				assert.Len(t, x, 32, "every comparison is of two SHA-256 sums: equal lengths")
				return subtle.ConstantTimeCompare(x, y)
			}
			act, ok := matchOperator(keys, tt.give, eq)
			assert.Equal(t, tt.wantActor, act)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, len(keys), calls, "every token is compared, whichever matched")
		})
	}
}

func TestOperatorKeysRefusesBadLists(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give []Operator
		want string
	}{
		{"none", nil, ErrNoToken.Error()},
		{"bad name", []Operator{{"a b", popup.RoleAdmin, "t"}}, "name must be"},
		{"no role", []Operator{{"alice", 0, "t"}}, `operator "alice" has no role`},
		{"empty token", []Operator{{"alice", popup.RoleAdmin, ""}}, "empty token"},
		{"name twice", []Operator{{"alice", popup.RoleAdmin, "t1"}, {"alice", popup.RoleViewer, "t2"}}, "named twice"},
		{"token twice", []Operator{{"alice", popup.RoleAdmin, "t1"}, {"bob", popup.RoleViewer, "t1"}}, "has the token of another operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := operatorKeys(tt.give)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestRouterRefusesToStartWithoutATokenOrWithADuplicate(t *testing.T) {
	t.Parallel()
	_, err := (&Admin{}).Router()
	require.ErrorIs(t, err, ErrNoToken)
	_, err = (&Admin{Token: "t", Operators: []Operator{{"admin", popup.RoleViewer, "u"}}}).Router()
	require.ErrorContains(t, err, "named twice")
}
