package popups

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
)

func TestDecodePopupBodyNamesTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want []popup.FieldError
	}{
		{"unknown field", `{"name":"x","colour":"red"}`, []popup.FieldError{{Field: "colour", Message: "is not a field of a popup"}}},
		{"unknown fields sorted", `{"zz":1,"name":"x","aa":2}`, []popup.FieldError{
			{Field: "aa", Message: "is not a field of a popup"}, {Field: "zz", Message: "is not a field of a popup"}}},
		{"unknown nested field", `{"name":"x","targeting":{"platform":["ios"]}}`, []popup.FieldError{
			{Field: "targeting.platform", Message: "is not a field of targeting"}}},
		{"unknown button field", `{"name":"x","buttons":[{"text":"a","url":"https://e.com"}]}`, []popup.FieldError{
			{Field: "buttons.url", Message: "is not a field of buttons"}}},
		{"priority as a string", `{"name":"x","priority":"x"}`, []popup.FieldError{
			{Field: "priority", Message: "must be an integer in range, not string"}}},
		{"priority beyond int64", `{"name":"x","priority":99999999999999999999}`, []popup.FieldError{
			{Field: "priority", Message: "must be an integer in range, not number 99999999999999999999"}}},
		{"fractional priority", `{"name":"x","priority":1.5}`, []popup.FieldError{
			{Field: "priority", Message: "must be an integer in range, not number 1.5"}}},
		{"rollout as a string", `{"name":"x","targeting":{"rollout_percent":"50"}}`, []popup.FieldError{
			{Field: "targeting.rollout_percent", Message: "must be an integer in range, not string"}}},
		{"name as a number", `{"name":5}`, []popup.FieldError{{Field: "name", Message: "must be a string, not number"}}},
		{"buttons as an object", `{"name":"x","buttons":{}}`, []popup.FieldError{{Field: "buttons", Message: "must be an array, not object"}}},
		{"start_at yesterday", `{"name":"x","start_at":"yesterday"}`, []popup.FieldError{
			{Field: "start_at", Message: "must be an RFC 3339 time such as 2026-12-01T00:00:00Z, or null"}}},
		{"end_at a number", `{"name":"x","end_at":5}`, []popup.FieldError{
			{Field: "end_at", Message: "must be an RFC 3339 time such as 2026-12-01T00:00:00Z, or null"}}},
		{"id as a string", `{"id":"7","name":"x"}`, []popup.FieldError{{Field: "id", Message: "must be an integer in range, not string"}}},
		{"every problem at once", `{"priority":"x","start_at":"soon","colour":1}`, []popup.FieldError{
			{Field: "priority", Message: "must be an integer in range, not string"},
			{Field: "start_at", Message: "must be an RFC 3339 time such as 2026-12-01T00:00:00Z, or null"},
			{Field: "colour", Message: "is not a field of a popup"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodePopupBody([]byte(tt.give))
			var ae *httpapi.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "invalid_json", ae.ErrCode())
			assert.Equal(t, tt.want, ae.Fields())
			assert.Contains(t, ae.Message(), tt.want[0].Field+": "+tt.want[0].Message)
		})
	}
}

func TestDecodePopupBodyRefusesANonObject(t *testing.T) {
	t.Parallel()
	for _, give := range []string{``, `[]`, `"x"`, `null`, `{"name":"x"} {}`, `{"name":`, `{"name":"x"`} {
		t.Run(give, func(t *testing.T) {
			_, err := decodePopupBody([]byte(give))
			var ae *httpapi.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "invalid_json", ae.ErrCode())
		})
	}
}

func TestDecodePopupBodyAcceptsServerManagedFields(t *testing.T) {
	t.Parallel()
	in, err := decodePopupBody([]byte(`{"id":7,"revision":3,"created_at":"2026-01-01T00:00:00Z","updated_at":"x","name":"n","priority":2}`))
	require.NoError(t, err)
	require.NotNil(t, in.ID)
	assert.Equal(t, int64(7), *in.ID)
	assert.Equal(t, "n", in.Name)
	assert.Equal(t, 2, *in.Priority)
}

func TestWireRoundTripIsLossless(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	links, err := popup.ParseLinkSchemes([]string{"https", "app"})
	require.NoError(t, err)
	want, err := popup.Input{Name: "n", BucketSeed: "seed-9", Priority: ptrTo(7), StartAt: &start,
		Targeting: &popup.TargetingInput{Platforms: []string{"ios"}, Regions: []string{"cn"}, RolloutPercent: ptrTo(30), UIDs: []string{"qa"}},
		Creative:  popup.Creative{Title: "t", LinkURL: "app://x", Buttons: []popup.Button{{Text: "Go", LinkURL: "https://e.com"}}, Ext: json.RawMessage(`{"a":1}`)}}.BuildWith(links)
	require.NoError(t, err)
	want.ID, want.Revision = 9, 4

	raw, err := json.Marshal(toWire(want, start))
	require.NoError(t, err)
	in, err := decodePopupBody(raw)
	require.NoError(t, err)
	got, err := fromWire(in).BuildWith(links)
	require.NoError(t, err)

	got.ID, got.Revision = want.ID, want.Revision
	assert.Equal(t, want, got)
	assert.Contains(t, string(raw), `"revision":4`)
}

func ptrTo[T any](v T) *T { return &v }

// TestWireCarriesEveryField: the admin wire shows every field of a popup, its experiment's too,
// and a popup put back as it was read builds into the same popup (the fields the server owns
// aside: the experiment's status, phase, salt, phase_started_at and concluded_variant are the
// store's to keep).
func TestWireCarriesEveryField(t *testing.T) {
	t.Parallel()
	want := popuptest.Full()
	want.Experiment = popuptest.FullExperiment()
	out := toWire(want, *want.StartAt)
	popuptest.RequireNoZeroField(t, out)
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	in, err := decodePopupBody(raw)
	require.NoError(t, err)
	links, err := popup.ParseLinkSchemes([]string{"https", "app"})
	require.NoError(t, err)
	got, err := fromWire(in).BuildWith(links)
	require.NoError(t, err)
	got.ID, got.Revision, got.CreatedAt, got.UpdatedAt = want.ID, want.Revision, want.CreatedAt, want.UpdatedAt
	require.NotNil(t, got.Experiment)
	e, w := got.Experiment, want.Experiment
	assert.Equal(t, popup.ExperimentDraft, e.Status, "sent back, the status is not taken")
	assert.Zero(t, e.Phase)
	assert.Empty(t, e.Salt)
	e.Status, e.Phase, e.Salt, e.PhaseStartedAt, e.ConcludedVariant = w.Status, w.Phase, w.Salt, w.PhaseStartedAt, w.ConcludedVariant
	assert.Equal(t, want, got)
}

// TestExperimentWireDefaultsAndNull: an experiment's coverage defaults to 100 and its control's
// mode to none; null (or no key) is no experiment, and none shows as null.
func TestExperimentWireDefaultsAndNull(t *testing.T) {
	t.Parallel()
	in, err := decodePopupBody([]byte(`{"name":"x","experiment":{"variants":[{"key":"a","weight":80}],"control":{"weight":20}}}`))
	require.NoError(t, err)
	p, err := fromWire(in).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	require.NotNil(t, p.Experiment)
	assert.Equal(t, 100, p.Experiment.CoveragePercent)
	assert.Equal(t, popup.ControlNone, p.Experiment.Control.Mode)
	assert.Equal(t, json.RawMessage(`{}`), p.Experiment.Variants[0].Ext)

	for _, give := range []string{`{"name":"x"}`, `{"name":"x","experiment":null}`} {
		in, err := decodePopupBody([]byte(give))
		require.NoError(t, err)
		p, err := fromWire(in).BuildWith(popup.LinkSchemes{})
		require.NoError(t, err)
		assert.Nil(t, p.Experiment, give)
	}
	none := popuptest.Full()
	none.Experiment = nil
	raw, err := json.Marshal(toWire(none, time.Now()))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"experiment":null`)
}

func TestDecodeExperimentNamesTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want []popup.FieldError
	}{
		{"unknown key", `{"variants":[],"colour":1}`, []popup.FieldError{{Field: "experiment.colour", Message: "is not a field of an experiment"}}},
		{"unknown variant key", `{"variants":[{"key":"a"},{"key":"b","url":"x"}]}`, []popup.FieldError{
			{Field: "experiment.variants[1].url", Message: "is not a field of a variant"}}},
		{"unknown control key", `{"variants":[],"control":{"weight":1,"kind":"x"}}`, []popup.FieldError{
			{Field: "experiment.control.kind", Message: "is not a field of the control"}}},
		{"unknown button key", `{"variants":[{"key":"a","buttons":[{"text":"t","url":"u"}]}]}`, []popup.FieldError{
			{Field: "experiment.variants[0].buttons.url", Message: "is not a field of buttons"}}},
		{"weight as a string", `{"variants":[{"key":"a","weight":"50"}]}`, []popup.FieldError{
			{Field: "experiment.variants[0].weight", Message: "must be an integer in range, not string"}}},
		{"planned_end_at not a time", `{"variants":[],"planned_end_at":"soon"}`, []popup.FieldError{
			{Field: "experiment.planned_end_at", Message: "must be an RFC 3339 time such as 2026-12-01T00:00:00Z, or null"}}},
		{"variants not an array", `{"variants":{}}`, []popup.FieldError{{Field: "experiment.variants", Message: "must be an array of variants"}}},
		{"a variant not an object", `{"variants":[1]}`, []popup.FieldError{{Field: "experiment.variants[0]", Message: "must be a variant (a JSON object)"}}},
		{"not an object", `[]`, []popup.FieldError{{Field: "experiment", Message: "must be an experiment (a JSON object)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodePopupBody([]byte(`{"name":"x","experiment":` + tt.give + `}`))
			var ae *httpapi.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "invalid_json", ae.ErrCode())
			assert.Equal(t, tt.want, ae.Fields())
		})
	}
}

// TestExperimentValidationNamesTheVariantField: a rule on a variant's content is a
// validation_failed naming the variant's field.
func TestExperimentValidationNamesTheVariantField(t *testing.T) {
	t.Parallel()
	in, err := decodePopupBody([]byte(`{"name":"x","experiment":{"variants":[{"key":"a","weight":50},{"key":"b","weight":50,"link_url":"javascript:alert(1)"}]}}`))
	require.NoError(t, err)
	_, err = fromWire(in).BuildWith(popup.LinkSchemes{})
	var ve *popup.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Fields, 1)
	assert.Equal(t, "experiment.variants[1].link_url", ve.Fields[0].Field)
}
