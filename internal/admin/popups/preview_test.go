package popups

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
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
		{
			name: "a trigger's and each rule's outcome",
			give: candidatesToWire([]popup.Candidate{{ID: 6, Name: "ruled", Reason: popup.ReasonRules,
				Trigger: &rules.Outcome{Matched: true, Condition: -1},
				Rules: []rules.Outcome{
					{Condition: 1, Attr: "build", Op: rules.OpSemverGte, Present: true, Seen: "8.1", Why: rules.WhyFalse},
					{Condition: 0, Attr: "email", Op: rules.OpEndsWith, Why: rules.WhyMissing},
				}}}),
			want: `[{"id":6,"name":"ruled","priority":0,"eligible":false,"reason":"rules","trigger":{"matched":true},` +
				`"rules":[{"matched":false,"condition":1,"attr":"build","op":"semver_gte","seen":"8.1","why":"false"},` +
				`{"matched":false,"condition":0,"attr":"email","op":"ends_with","why":"missing"}]}]`,
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
