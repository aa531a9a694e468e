package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			rows, next := NextPage(tc.rows, tc.limit, id)
			assert.Equal(t, tc.wantRows, rows)
			assert.Equal(t, tc.wantNext, next)
		})
	}
}

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
			assert.Equal(t, tt.want, IfMatch(c))
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
			got, aerr := ParseFlag("include_archived", tt.give)
			if tt.wantErr {
				require.NotNil(t, aerr)
				assert.Equal(t, "include_archived", aerr.Fields()[0].Field)
				assert.True(t, strings.Contains(aerr.Message(), "include_archived"))
				return
			}
			require.Nil(t, aerr)
			assert.Equal(t, tt.want, got)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestSniffText: spreadsheets and other binary files are refused, text is not.
func TestSniffText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want *Error
	}{
		{"xlsx or ods (zip)", "PK\x03\x04rest", errSpreadsheetUpload},
		{"xls (OLE)", "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", errSpreadsheetUpload},
		{"UTF-16", "\xff\xfeu\x001\x00", errUTF16Upload},
		{"a NUL byte", "u1\n\x00", errBinaryUpload},
		{"text", "u1\nu2\n", nil},
		{"CSV with a BOM", "\ufeffuid\nu1\n", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, SniffText([]byte(tt.give)), tt.name)
	}
}
