package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// An error's fields keep the keys api/openapi.yaml gives them (Error.fields), now that the
// domain types carry no JSON tags.
func TestAnswerWireShapesKeepTheirKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give any
		want string
	}{
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
