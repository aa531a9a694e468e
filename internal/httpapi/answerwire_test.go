package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// The preview's candidates and an error's fields keep the keys api/openapi.yaml gives them
// (Candidate; Error.fields), now that the domain types carry no JSON tags.
func TestAnswerWireShapesKeepTheirKeys(t *testing.T) {
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
		{
			name: "error fields",
			give: fieldErrorsToWire([]popup.FieldError{{Field: "targeting.uids[1]", Message: "must be " + popup.UIDRule}, {Field: "name", Message: "is required"}}),
			want: `[{"field":"targeting.uids[1]","message":"must be 1-64 characters of [A-Za-z0-9_.:-]"},{"field":"name","message":"is required"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.give)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}
