package httpapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func TestDecodeSettingsAccepts(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"America/Los_Angeles", "Asia/Kathmandu", "UTC", "Etc/GMT+8"} {
		t.Run(zone, func(t *testing.T) {
			got, err := decodeSettings([]byte(`{"reporting_time_zone":"` + zone + `"}`))
			require.NoError(t, err)
			assert.Equal(t, zone, got.ReportingTimeZone)
		})
	}
}

// refusal is the code of a refused input and the fields it names.
func refusal(t *testing.T, err error) (code string, fields []string) {
	t.Helper()
	var ve *popup.ValidationError
	if errors.As(err, &ve) {
		for _, f := range ve.Fields {
			fields = append(fields, f.Field)
		}
		return "validation_failed", fields
	}
	var ae *apiError
	require.True(t, errors.As(err, &ae), "%v", err)
	return ae.code, nil
}

func TestDecodeSettingsRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give       string
		wantCode   string
		wantFields []string
	}{
		{`{"reporting_time_zone":""}`, "validation_failed", []string{"reporting_time_zone"}},
		{`{"reporting_time_zone":"Local"}`, "validation_failed", []string{"reporting_time_zone"}},
		{`{"reporting_time_zone":"Mars/Olympus"}`, "validation_failed", []string{"reporting_time_zone"}},
		{`{"reporting_time_zone":"../../etc/passwd"}`, "validation_failed", []string{"reporting_time_zone"}},
		{`{"reporting_time_zone":-8}`, "validation_failed", []string{"reporting_time_zone"}},
		{`{}`, "validation_failed", []string{"reporting_time_zone"}},
		{`{"reporting_time_zone":"UTC","locale":"en","colour":1}`, "validation_failed", []string{"colour", "locale"}},
		{`[`, "invalid_json", nil},
		{`null`, "invalid_json", nil},
		{`{"reporting_time_zone":"UTC"} {}`, "invalid_json", nil},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := decodeSettings([]byte(tt.give))
			code, fields := refusal(t, err)
			assert.Equal(t, tt.wantCode, code)
			assert.Equal(t, tt.wantFields, fields)
		})
	}
}
