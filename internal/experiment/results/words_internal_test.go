package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A span of one day is "1 day", not "1 days" (issue 53).
func TestCountedSaysOneInTheSingular(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give int64
		want string
	}{
		{give: 1, want: "1 day"},
		{give: 2, want: "2 days"},
		{give: 0, want: "0 days"},
		{give: 1200, want: "1,200 days"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, counted(tt.give, "day"))
	}
}
