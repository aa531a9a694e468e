package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			var ae *apiError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "invalid_json", ae.code)
			assert.Equal(t, tt.want, ae.fields)
			assert.Contains(t, ae.message, tt.want[0].Field+": "+tt.want[0].Message)
		})
	}
}

func TestDecodePopupBodyRefusesANonObject(t *testing.T) {
	t.Parallel()
	for _, give := range []string{``, `[]`, `"x"`, `null`, `{"name":"x"} {}`, `{"name":`, `{"name":"x"`} {
		t.Run(give, func(t *testing.T) {
			_, err := decodePopupBody([]byte(give))
			var ae *apiError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "invalid_json", ae.code)
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
	want, err := popup.Input{Name: "n", BucketSeed: "seed-9", Priority: ptrTo(7), StartAt: &start, Title: "t", LinkURL: "app://x",
		Targeting: &popup.TargetingInput{Platforms: []string{"ios"}, Regions: []string{"cn"}, RolloutPercent: ptrTo(30), UIDs: []string{"qa"}},
		Buttons:   []popup.Button{{Text: "Go", LinkURL: "https://e.com"}}, Ext: json.RawMessage(`{"a":1}`)}.BuildWith(links)
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

func TestIfMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give []string
		want []int64
	}{
		{"absent", nil, nil},
		{"star", []string{"*"}, nil},
		{"one tag", []string{`"3"`}, []int64{3}},
		{"a list", []string{`"3", "5"`}, []int64{3, 5}},
		{"two headers", []string{`"3"`, `"4"`}, []int64{3, 4}},
		{"weak tag never matches", []string{`W/"3"`}, []int64{}},
		{"unquoted never matches", []string{`3`}, []int64{}},
		{"foreign tag never matches", []string{`"abc"`}, []int64{}},
		{"star in a list", []string{`"3", *`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest(http.MethodPut, "/", nil)
			for _, v := range tt.give {
				c.Request.Header.Add("If-Match", v)
			}
			assert.Equal(t, tt.want, ifMatch(c))
		})
	}
}

func TestParseFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give    string
		want    bool
		wantErr bool
	}{
		{give: "", want: false}, {give: "true", want: true}, {give: "TRUE", want: true}, {give: "1", want: true},
		{give: "Yes", want: true}, {give: "false", want: false}, {give: "0", want: false}, {give: "NO", want: false},
		{give: "y", wantErr: true}, {give: "2", wantErr: true}, {give: "on", wantErr: true}, {give: " true", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, aerr := parseFlag("include_archived", tt.give)
			if tt.wantErr {
				require.NotNil(t, aerr)
				assert.Equal(t, "include_archived", aerr.fields[0].Field)
				assert.True(t, strings.Contains(aerr.message, "include_archived"))
				return
			}
			require.Nil(t, aerr)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestWireCarriesEveryField: the admin wire shows every field of a popup, and a popup put back as
// it was read builds into the same popup (the fields the server owns aside).
func TestWireCarriesEveryField(t *testing.T) {
	t.Parallel()
	want := popuptest.Full()
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
	assert.Equal(t, want, got)
}
