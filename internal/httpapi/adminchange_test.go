package httpapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNextPage(t *testing.T) {
	t.Parallel()
	id := func(n int64) int64 { return n }
	for _, tc := range []struct {
		name     string
		rows     []int64
		limit    int
		wantRows []int64
		wantNext *string
	}{
		{"empty", nil, 2, nil, nil},
		{"short page is the last", []int64{5}, 2, []int64{5}, nil},
		{"full page without the extra row is the last", []int64{5, 7}, 2, []int64{5, 7}, nil},
		{"the extra row means a next page after the last kept", []int64{5, 7, 9}, 2, []int64{5, 7}, ptrTo("7")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, next := nextPage(tc.rows, tc.limit, id)
			assert.Equal(t, tc.wantRows, rows)
			assert.Equal(t, tc.wantNext, next)
		})
	}
}
