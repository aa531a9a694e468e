package popups

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// TestWhereOnTheWireNamesThePath: placements, a trigger and rules are read from a popup body and
// every problem is a 400 naming its path, from the decoding (an unknown key) or from the domain
// (an unknown operator, a value the operator cannot take, a regex that does not compile).
func TestWhereOnTheWireNamesThePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want []popup.FieldError
	}{
		{"unknown operator", `{"name":"x","targeting":{"rules":[{"conditions":[{"attr":"plan","op":"eq","value":"pro"}]},` +
			`{"conditions":[{"attr":"plan","op":"like","value":"p"}]}]}}`,
			[]popup.FieldError{{Field: "targeting.rules[1].conditions[0].op", Message: "must be one of eq, neq, in, not_in, contains, starts_with, ends_with, matches, gt, gte, lt, lte, semver_eq, semver_gt, semver_gte, semver_lt, semver_lte, exists, not_exists"}}},
		{"an object as a value", `{"name":"x","targeting":{"rules":[{"conditions":[{"attr":"plan","op":"eq","value":{"a":1}}]}]}}`,
			[]popup.FieldError{{Field: "targeting.rules[0].conditions[0].value", Message: "must be a string, a number or a boolean"}}},
		{"a regex that does not compile", `{"name":"x","targeting":{"rules":[{"conditions":[{"attr":"e","op":"matches","value":"a(b"}]}]}}`,
			[]popup.FieldError{{Field: "targeting.rules[0].conditions[0].value", Message: "is not a valid RE2 regular expression: error parsing regexp: missing closing ): `a(b`"}}},
		{"a trigger without its event", `{"name":"x","targeting":{"trigger":{"conditions":[]}}}`,
			[]popup.FieldError{{Field: "targeting.trigger.event", Message: "must be 1-64 characters of [A-Za-z0-9_.:-]"}}},
		{"a bad placement", `{"name":"x","targeting":{"placements":["Home"]}}`,
			[]popup.FieldError{{Field: "targeting.placements[0]", Message: "must be 1-64 characters of [a-z0-9_-]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := decodePopupBody([]byte(tt.give))
			require.NoError(t, err)
			_, err = fromWire(in).BuildWith(popup.LinkSchemes{})
			var ve *popup.ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.want, ve.Fields)
		})
	}
	_, err := decodePopupBody([]byte(`{"name":"x","targeting":{"rules":[{"conditions":[{"attr":"a","op":"exists","colour":1}]}]}}`))
	assert.ErrorContains(t, err, "targeting.colour: is not a field of targeting", "a key a condition does not have is refused")
}

// TestWhereDefaultsOnTheWire: a popup without them shows placements ["home"], trigger null and
// rules []; sent back, it is the same popup.
func TestWhereDefaultsOnTheWire(t *testing.T) {
	t.Parallel()
	p, err := popup.Input{Name: "x"}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	raw, err := json.Marshal(toWire(p, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	require.NoError(t, err)
	var got struct {
		Targeting map[string]json.RawMessage `json:"targeting"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.JSONEq(t, `["home"]`, string(got.Targeting["placements"]))
	assert.JSONEq(t, `null`, string(got.Targeting["trigger"]))
	assert.JSONEq(t, `[]`, string(got.Targeting["rules"]))
	in, err := decodePopupBody(raw)
	require.NoError(t, err)
	back, err := fromWire(in).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	assert.Equal(t, p.Targeting, back.Targeting)
}
