package settings

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/httpapi"
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

func TestDecodeSettingsTakesThePacingOrLeavesItOut(t *testing.T) {
	t.Parallel()
	got, err := decodeSettings([]byte(`{"reporting_time_zone":"UTC","min_gap_seconds":600,"daily_cap":3}`))
	require.NoError(t, err)
	require.NotNil(t, got.MinGapSeconds)
	require.NotNil(t, got.DailyCap)
	assert.EqualValues(t, 600, *got.MinGapSeconds)
	assert.Equal(t, 3, *got.DailyCap)

	got, err = decodeSettings([]byte(`{"reporting_time_zone":"UTC"}`))
	require.NoError(t, err)
	assert.Nil(t, got.MinGapSeconds, "left out: unchanged")
	assert.Nil(t, got.DailyCap)
	assert.Nil(t, got.HoldoutPercent)

	for _, give := range []int{0, 1, 20} {
		got, err = decodeSettings([]byte(`{"reporting_time_zone":"UTC","holdout_percent":` + strconv.Itoa(give) + `}`))
		require.NoError(t, err)
		require.NotNil(t, got.HoldoutPercent)
		assert.Equal(t, give, *got.HoldoutPercent)
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
	var ae *httpapi.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	return ae.ErrCode(), nil
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
		{`{"reporting_time_zone":"UTC","min_gap_seconds":-1}`, "validation_failed", []string{"min_gap_seconds"}},
		{`{"reporting_time_zone":"UTC","min_gap_seconds":30,"daily_cap":1001}`, "validation_failed", []string{"daily_cap"}},
		{`{"reporting_time_zone":"UTC","daily_cap":"3"}`, "validation_failed", []string{"daily_cap"}},
		{`{"reporting_time_zone":"UTC","min_gap_seconds":1.5}`, "validation_failed", []string{"min_gap_seconds"}},
		{`{"reporting_time_zone":"UTC","holdout_percent":21}`, "validation_failed", []string{"holdout_percent"}},
		{`{"reporting_time_zone":"UTC","holdout_percent":-1}`, "validation_failed", []string{"holdout_percent"}},
		{`{"reporting_time_zone":"UTC","holdout_percent":2.5}`, "validation_failed", []string{"holdout_percent"}},
		{`{"reporting_time_zone":"UTC","holdout_percent":"10"}`, "validation_failed", []string{"holdout_percent"}},
		{`{"reporting_time_zone":"UTC","holdout_percent":null}`, "validation_failed", []string{"holdout_percent"}},
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
