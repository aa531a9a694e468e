package popups

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// The preview's candidates keep the keys api/openapi.yaml gives them (Candidate), now that the
// domain types carry no JSON tags.
func TestCandidatesKeepTheirKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give any
		want string
	}{
		{
			name: "candidates: the chosen one has no reason",
			give: candidatesToWire([]popup.Candidate{
				{ID: 3, Name: "spring", Priority: 9, Eligible: true},
				{ID: 4, Name: "autumn", Priority: 1, Reason: popup.ReasonLowerPriority},
				{ID: 5, Name: "draft", Reason: popup.ReasonNotActive},
			}),
			want: `[{"id":3,"name":"spring","priority":9,"eligible":true},` +
				`{"id":4,"name":"autumn","priority":1,"eligible":false,"reason":"lower_priority"},` +
				`{"id":5,"name":"draft","priority":0,"eligible":false,"reason":"not_active"}]`,
		},
		{name: "no candidates", give: candidatesToWire([]popup.Candidate{}), want: `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.give)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}
