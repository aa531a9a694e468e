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
				err = o.Add(op[0], RoleEditor, op[1])
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

func TestOperatorsRefuseAnOperatorWithoutARole(t *testing.T) {
	t.Parallel()
	var o Operators
	require.ErrorContains(t, o.Add("alice", 0, "t1"), `operator "alice" has no role: must be viewer, editor, publisher or admin`)
	require.ErrorContains(t, o.Add("bob", RoleAdmin+1, "t2"), `operator "bob" has no role`)
}

func TestParseOperator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give      string
		wantName  string
		wantRole  Role
		wantToken string
		wantErr   string
	}{
		{give: "alice:s3cret", wantName: "alice", wantRole: RoleAdmin, wantToken: "s3cret"},
		{give: "alice@viewer:s3cret", wantName: "alice", wantRole: RoleViewer, wantToken: "s3cret"},
		{give: "alice@editor:s3cret", wantName: "alice", wantRole: RoleEditor, wantToken: "s3cret"},
		{give: "alice@publisher:s3cret", wantName: "alice", wantRole: RolePublisher, wantToken: "s3cret"},
		{give: "alice@admin:s3cret", wantName: "alice", wantRole: RoleAdmin, wantToken: "s3cret"},
		{give: " alice @ editor : s3cret ", wantName: "alice", wantRole: RoleEditor, wantToken: "s3cret"},
		{give: "alice:t@k:x", wantName: "alice", wantRole: RoleAdmin, wantToken: "t@k:x"},
		{give: "alice@owner:s3cret", wantErr: `operator "alice@owner": unknown role "owner": must be viewer, editor, publisher or admin`},
		{give: "alice@:s3cret", wantErr: `unknown role ""`},
		{give: "alice@Editor:s3cret", wantErr: `unknown role "Editor"`},
		{give: "alice", wantErr: "not an operator entry (name:token or name@role:token)"},
		{give: "s3cret", wantErr: "not an operator entry"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			name, role, token, err := ParseOperator(tt.give)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.NotContains(t, err.Error(), "s3cret", "a token is never quoted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantName, name)
			assert.Equal(t, tt.wantRole, role)
			assert.Equal(t, tt.wantToken, token)
		})
	}
}
