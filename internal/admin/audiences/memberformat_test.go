package audiences

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

type yielded struct {
	UID  string
	Line int
}

// drain reads every uid of l, and the error that ended it (nil at the end of the upload).
func drain(t *testing.T, l popup.MemberLines) ([]yielded, error) {
	t.Helper()
	var out []yielded
	for {
		b, line, err := l.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, yielded{UID: string(b), Line: line})
	}
}

func TestUploadFormatsYieldUIDsWithTheirLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000)
	tests := []struct {
		name    string
		give    popup.MemberLines
		want    []yielded
		wantErr *popup.MemberSyntaxError
	}{
		{name: "text: blank lines, CRLF, no final newline", give: TextLines(strings.NewReader("a\r\n\n  \nb\nc")),
			want: []yielded{{"a", 1}, {"b", 4}, {"c", 5}}},
		{name: "text: a line too long keeps its number", give: TextLines(strings.NewReader("a\n" + long + "\nb\n")),
			want: []yielded{{"a", 1}, {long[:maxLine], 2}, {"b", 3}}},
		{name: "csv: the uid column, quotes, a field over two lines", give: CSVLines(strings.NewReader("\ufeffname, UID \n\"x\ny\",u1\nz,\"u2\"\nw\n"), ""),
			want: []yielded{{"u1", 3}, {"u2", 4}, {"", 5}}},
		{name: "csv: no uid column", give: CSVLines(strings.NewReader("id,name\n1,a\n"), ""), wantErr: &popup.MemberSyntaxError{Line: 1}},
		{name: "csv: empty", give: CSVLines(strings.NewReader(""), ""), wantErr: &popup.MemberSyntaxError{Line: 1}},
		{name: "csv: a broken quote", give: CSVLines(strings.NewReader("uid\na\n\"b\"c\n"), ""), want: []yielded{{"a", 2}}, wantErr: &popup.MemberSyntaxError{Line: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := drain(t, tt.give)
			assert.Equal(t, tt.want, got)
			if tt.wantErr == nil {
				assert.NoError(t, err)
				return
			}
			var se *popup.MemberSyntaxError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.wantErr.Line, se.Line)
		})
	}
}

// TestHeaderName pins which first lines of a text upload are a header, not a member.
func TestHeaderName(t *testing.T) {
	t.Parallel()
	for give, want := range map[string]bool{
		"uid": true, "UID": true, "id": true, "customer_id": true, "user-id": true, "External ID": true, "userId": true, "customerID": true,
		"david": false, "user_1_id": false, "vip-2": false, "u1": false, "Id": true, "squid": false,
	} {
		assert.Equal(t, want, HeaderName([]byte(give)), give)
	}
}
