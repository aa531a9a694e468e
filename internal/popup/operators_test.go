package popup

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOperatorsRefuseBadNamesEmptyAndRepeatedTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		give    [][2]string // name, token
		wantErr string      // of the last one; "" = all accepted
	}{
		{name: "distinct operators", give: [][2]string{{"alice", "t1"}, {"bob.ops-2", "t2"}}},
		{name: "bad name", give: [][2]string{{"al ice", "t1"}}, wantErr: "operator name must be " + OperatorNameRule},
		{name: "name too long", give: [][2]string{{strings.Repeat("a", 65), "t1"}}, wantErr: "operator name must be"},
		{name: "empty token", give: [][2]string{{"alice", ""}}, wantErr: `operator "alice" has an empty token`},
		{name: "name twice", give: [][2]string{{"alice", "t1"}, {"alice", "t2"}}, wantErr: `operator "alice" is named twice`},
		{name: "token twice", give: [][2]string{{"alice", "t1"}, {"bob", "t1"}}, wantErr: `operator "bob" has the token of another operator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Operators
			var err error
			for _, op := range tt.give {
				err = o.Add(op[0], op[1])
			}
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			assert.NotContains(t, err.Error(), "t1", "a token is never quoted")
		})
	}
}
