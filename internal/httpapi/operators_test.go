package httpapi

import (
	"crypto/subtle"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMatchOperatorComparesEveryTokenWithoutEarlyExit(t *testing.T) {
	t.Parallel()
	keys, err := operatorKeys([]Operator{{"alice", "tok-a"}, {"bob", "tok-b"}, {"carol", "a-much-longer-token-of-carol"}})
	require.NoError(t, err)
	tests := []struct {
		give     string
		wantName string
		wantOK   bool
	}{
		{"tok-a", "alice", true}, // the first key matches: the others are compared all the same
		{"tok-b", "bob", true},
		{"a-much-longer-token-of-carol", "carol", true},
		{"tok-", "", false},
		{"", "", false},
		{"tok-a ", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			calls := 0
			eq := func(x, y []byte) int {
				calls++
				assert.Len(t, x, 32, "every comparison is of two SHA-256 sums: equal lengths")
				return subtle.ConstantTimeCompare(x, y)
			}
			name, ok := matchOperator(keys, tt.give, eq)
			assert.Equal(t, tt.wantName, name)
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
		{"bad name", []Operator{{"a b", "t"}}, "name must be"},
		{"empty token", []Operator{{"alice", ""}}, "empty token"},
		{"name twice", []Operator{{"alice", "t1"}, {"alice", "t2"}}, "named twice"},
		{"token twice", []Operator{{"alice", "t1"}, {"bob", "t1"}}, "has the token of another operator"},
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
	_, err = (&Admin{Token: "t", Operators: []Operator{{"admin", "u"}}}).Router()
	require.ErrorContains(t, err, "named twice")
}
