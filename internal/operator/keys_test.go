package operator

import (
	"crypto/subtle"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestMatchComparesEveryTokenWithoutEarlyExit(t *testing.T) {
	t.Parallel()
	keys, err := NewKeys([]Operator{{"alice", popup.RoleViewer, "tok-a"}, {"bob", popup.RoleEditor, "tok-b"},
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
			act, ok := keys.match(tt.give, eq)
			assert.Equal(t, tt.wantActor, act)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, len(keys.Actors()), calls, "every token is compared, whichever matched")
		})
	}
	_, ok := Keys{}.Match("tok-a")
	assert.False(t, ok, "no operator: no token matches")
}

func TestNewKeysRefusesBadLists(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give []Operator
		want string
	}{
		{"bad name", []Operator{{"a b", popup.RoleAdmin, "t"}}, "name must be"},
		{"no role", []Operator{{"alice", 0, "t"}}, `operator "alice" has no role`},
		{"empty token", []Operator{{"alice", popup.RoleAdmin, ""}}, "empty token"},
		{"name twice", []Operator{{"alice", popup.RoleAdmin, "t1"}, {"alice", popup.RoleViewer, "t2"}}, "named twice"},
		{"token twice", []Operator{{"alice", popup.RoleAdmin, "t1"}, {"bob", popup.RoleViewer, "t1"}}, "has the token of another operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewKeys(tt.give)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
