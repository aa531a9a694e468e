package popup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRolesAreOrderedEachWithTheRightsOfThoseBelow(t *testing.T) {
	t.Parallel()
	roles := []Role{RoleViewer, RoleEditor, RolePublisher, RoleAdmin}
	for i, have := range roles {
		for j, need := range roles {
			assert.Equal(t, i >= j, have.Allows(need), "%s allows %s", have, need)
		}
		assert.False(t, have.Allows(0), "nothing needs no role")
		assert.False(t, Role(0).Allows(have), "no role allows nothing")
	}
}

func TestParseRoleReadsWhatStringWrites(t *testing.T) {
	t.Parallel()
	for _, r := range []Role{RoleViewer, RoleEditor, RolePublisher, RoleAdmin} {
		got, err := ParseRole(r.String())
		require.NoError(t, err)
		assert.Equal(t, r, got)
	}
	for _, bad := range []string{"", "Admin", "owner", " viewer"} {
		_, err := ParseRole(bad)
		assert.ErrorContains(t, err, "must be viewer, editor, publisher or admin", bad)
	}
	assert.Equal(t, "", Role(0).String())
	assert.Equal(t, "", (RoleAdmin + 1).String())
}

// TestWriteNeeds is the rights table of popup writes (docs/CONTRACT.md §9).
func TestWriteNeeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		give     Write
		wantRole Role
		wantWhat string
	}{
		{"create a draft", Write{Action: ChangeCreate, After: StatusDraft}, RoleEditor, "creating a draft"},
		{"create an active popup", Write{Action: ChangeCreate, After: StatusActive}, RolePublisher, "creating a popup with status active"},
		{"create a paused popup", Write{Action: ChangeCreate, After: StatusPaused}, RolePublisher, "creating a popup with status paused"},
		{"edit a draft that stays one", Write{Action: ChangeUpdate, Before: StatusDraft, After: StatusDraft}, RoleEditor, "editing a draft"},
		{"publish a draft", Write{Action: ChangeUpdate, Before: StatusDraft, After: StatusActive}, RolePublisher, "changing a draft's status to active"},
		{"pause a draft", Write{Action: ChangeUpdate, Before: StatusDraft, After: StatusPaused}, RolePublisher, "changing a draft's status to paused"},
		{"archive a draft by PUT", Write{Action: ChangeUpdate, Before: StatusDraft, After: StatusArchived}, RolePublisher, "changing a draft's status to archived"},
		{"edit a live popup", Write{Action: ChangeUpdate, Before: StatusActive, After: StatusActive}, RolePublisher, "changing a popup that is active"},
		{"unpublish a live popup to a draft", Write{Action: ChangeUpdate, Before: StatusActive, After: StatusDraft}, RolePublisher, "changing a popup that is active"},
		{"resume a paused popup", Write{Action: ChangeUpdate, Before: StatusPaused, After: StatusActive}, RolePublisher, "changing a popup that is paused"},
		{"edit an archived popup", Write{Action: ChangeUpdate, Before: StatusArchived, After: StatusDraft}, RolePublisher, "changing a popup that is archived"},
		{"archive", Write{Action: ChangeArchive, Before: StatusDraft}, RolePublisher, "archiving a popup"},
		{"roll back a draft", Write{Action: ChangeRollback, Before: StatusDraft, After: StatusDraft}, RolePublisher, "rolling back a popup"},
		{"import", Write{Action: ChangeImport}, RolePublisher, "importing popups"},
		{"dry-run import", Write{Action: ChangeImport, DryRun: true}, RoleEditor, "a dry-run import"},
		{"start a draft's experiment", Write{Action: ChangeExperimentStart, Before: StatusDraft}, RoleEditor, "starting the experiment of a popup that is draft"},
		{"stop a live popup's experiment", Write{Action: ChangeExperimentStop, Before: StatusActive}, RolePublisher, "stopping the experiment of a popup that is active"},
		{"conclude a paused popup's experiment", Write{Action: ChangeExperimentConclude, Before: StatusPaused}, RolePublisher, "concluding the experiment of a popup that is paused"},
		{"conclude a draft's experiment", Write{Action: ChangeExperimentConclude, Before: StatusDraft}, RoleEditor, "concluding the experiment of a popup that is draft"},
		{"unknown action", Write{Action: "truncate"}, RoleAdmin, "writing a popup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			role, what := tt.give.Needs()
			assert.Equal(t, tt.wantRole, role)
			assert.Equal(t, tt.wantWhat, what)
		})
	}
}

func TestActorMayAndTheRefusalNamesTheRoleNeeded(t *testing.T) {
	t.Parallel()
	publish := Write{Action: ChangeUpdate, Before: StatusDraft, After: StatusActive}
	tests := []struct {
		name    string
		give    Actor
		wantErr string // "" = allowed
	}{
		{"viewer", Actor{"vera", RoleViewer}, "changing a draft's status to active needs the publisher role; vera is a viewer"},
		{"editor", Actor{"alice", RoleEditor}, "changing a draft's status to active needs the publisher role; alice is an editor"},
		{"publisher", Actor{"pat", RolePublisher}, ""},
		{"admin", Actor{"root", RoleAdmin}, ""},
		{"no role", Actor{"nobody", 0}, "needs the publisher role; nobody is a "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.give.May(publish)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			var fe *ForbiddenError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, RolePublisher, fe.Needed)
			assert.Equal(t, tt.give, fe.Actor)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	assert.EqualError(t, Actor{"ed", RoleEditor}.Need(RoleAdmin, "reloading the cache"), "reloading the cache needs the admin role; ed is an editor")
}
