package manage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// A member write's change is exact against the list it is worked out for: a delta stores only the
// fingerprints that change the list, and the counts are those it really adds and removes.
func TestChangeOfAMemberWrite(t *testing.T) {
	t.Parallel()
	cur, err := audience.NewSet(1, 4, audience.Key{}, []uint64{10, 20, 30, 40})
	require.NoError(t, err)
	tests := []struct {
		name   string
		action popup.AudienceAction
		give   []uint64
		want   change
	}{
		{name: "a replace keeps two, adds two, removes two", action: popup.AudienceReplace, give: []uint64{5, 20, 40, 50},
			want: change{fps: []uint64{5, 20, 40, 50}, added: 2, removed: 2, size: 4}},
		{name: "a replace with nothing empties the list", action: popup.AudienceReplace, give: []uint64{},
			want: change{fps: []uint64{}, removed: 4, size: 0}},
		{name: "an add stores only the newcomers", action: popup.AudienceAdd, give: []uint64{1, 10, 35, 40, 99},
			want: change{fps: []uint64{1, 35, 99}, added: 3, size: 7}},
		{name: "an add of members only changes nothing", action: popup.AudienceAdd, give: []uint64{10, 40},
			want: change{fps: []uint64{}, size: 4}},
		{name: "a remove stores only the members", action: popup.AudienceRemove, give: []uint64{1, 20, 30, 99},
			want: change{fps: []uint64{20, 30}, removed: 2, size: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, changeOf(tt.action, cur, tt.give))
		})
	}
}
