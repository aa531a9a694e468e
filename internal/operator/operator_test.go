package operator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestSetRefusesBadNamesEmptyAndRepeatedTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		give    [][2]string // name, token
		wantErr string      // of the last one; "" = all accepted
	}{
		{name: "distinct operators", give: [][2]string{{"alice", "t1"}, {"bob.ops-2", "t2"}}},
		{name: "bad name", give: [][2]string{{"al ice", "t1"}}, wantErr: "operator name must be " + NameRule},
		{name: "name too long", give: [][2]string{{strings.Repeat("a", 65), "t1"}}, wantErr: "operator name must be"},
		{name: "empty token", give: [][2]string{{"alice", ""}}, wantErr: `operator "alice" has an empty token`},
		{name: "name twice", give: [][2]string{{"alice", "t1"}, {"alice", "t2"}}, wantErr: `operator "alice" is named twice`},
		{name: "token twice", give: [][2]string{{"alice", "t1"}, {"bob", "t1"}}, wantErr: `operator "bob" has the token of another operator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Set
			var err error
			for _, op := range tt.give {
				err = o.Add(Operator{Name: op[0], Role: popup.RoleEditor, Token: op[1]})
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

func TestSetRefusesAnOperatorWithoutARole(t *testing.T) {
	t.Parallel()
	var o Set
	require.ErrorContains(t, o.Add(Operator{Name: "alice", Role: 0, Token: "t1"}), `operator "alice" has no role: must be viewer, editor, publisher or admin`)
	require.ErrorContains(t, o.Add(Operator{Name: "bob", Role: popup.RoleAdmin + 1, Token: "t2"}), `operator "bob" has no role`)
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give      string
		wantName  string
		wantRole  popup.Role
		wantToken string
		wantErr   string
	}{
		{give: "alice:s3cret", wantName: "alice", wantRole: popup.RoleAdmin, wantToken: "s3cret"},
		{give: "alice@viewer:s3cret", wantName: "alice", wantRole: popup.RoleViewer, wantToken: "s3cret"},
		{give: "alice@editor:s3cret", wantName: "alice", wantRole: popup.RoleEditor, wantToken: "s3cret"},
		{give: "alice@publisher:s3cret", wantName: "alice", wantRole: popup.RolePublisher, wantToken: "s3cret"},
		{give: "alice@admin:s3cret", wantName: "alice", wantRole: popup.RoleAdmin, wantToken: "s3cret"},
		{give: " alice @ editor : s3cret ", wantName: "alice", wantRole: popup.RoleEditor, wantToken: "s3cret"},
		{give: "alice:t@k:x", wantName: "alice", wantRole: popup.RoleAdmin, wantToken: "t@k:x"},
		{give: "alice@owner:s3cret", wantErr: `operator "alice@owner": unknown role "owner": must be viewer, editor, publisher or admin`},
		{give: "alice@:s3cret", wantErr: `unknown role ""`},
		{give: "alice@Editor:s3cret", wantErr: `unknown role "Editor"`},
		{give: "alice", wantErr: "not an operator entry (name:token or name@role:token)"},
		{give: "s3cret", wantErr: "not an operator entry"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			op, err := Parse(tt.give)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.NotContains(t, err.Error(), "s3cret", "a token is never quoted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Operator{Name: tt.wantName, Role: tt.wantRole, Token: tt.wantToken}, op)
		})
	}
}
