package popup_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

func mustVersion(t testing.TB, s string) popup.Version {
	t.Helper()
	v, err := popup.ParseVersion(s)
	require.NoError(t, err)
	return v
}

func TestParseVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want popup.Version
	}{
		{give: "0", want: popup.Version{}},
		{give: "1", want: popup.Version{1}},
		{give: "8.10", want: popup.Version{8, 10}},
		{give: "8.10.0", want: popup.Version{8, 10}},
		{give: "8.10.0.1234", want: popup.Version{8, 10, 0, 1234}},
		{give: "08.010", want: popup.Version{8, 10}},
		{give: "999999.999999.999999.999999", want: popup.Version{999999, 999999, 999999, 999999}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := popup.ParseVersion(tt.give)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseVersionRejects(t *testing.T) {
	t.Parallel()
	tests := []string{
		"", ".", "1.", ".1", "1..2", "a.b", "8.1.0-beta", "v8", "1.2.3.4.5",
		"+1", "-1", "1.-2", " 1", "1 ", "1. 2", "1000000", "1.1000000", "99999999999999999999", "１",
	}
	for _, give := range tests {
		t.Run(give, func(t *testing.T) {
			got, err := popup.ParseVersion(give)
			assert.ErrorIs(t, err, popup.ErrInvalidVersion)
			assert.Zero(t, got)
		})
	}
}

func TestVersionCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{a: "8.10.0", b: "8.9.9", want: 1},
		{a: "8.9.9", b: "8.10.0", want: -1},
		{a: "10", b: "9", want: 1},
		{a: "1.0", b: "1", want: 0},
		{a: "8.10", b: "8.10.0.0", want: 0},
		{a: "1.0.0.1", b: "1", want: 1},
		{a: "2", b: "1.999999.999999.999999", want: 1},
		{a: "0", b: "0.0.0.1", want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_vs_"+tt.b, func(t *testing.T) {
			assert.Equal(t, tt.want, mustVersion(t, tt.a).Compare(mustVersion(t, tt.b)))
		})
	}
}
