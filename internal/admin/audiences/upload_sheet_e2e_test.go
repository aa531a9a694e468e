package audiences_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
)

// TestAudienceUploadsFromSpreadsheets: what a spreadsheet user uploads, against the real stack.
// An xlsx, an xls or another binary file is refused before a line is read, saying "save it as
// CSV"; a CSV export names its uid column with uid_column, or is told the columns it has; ids
// are trimmed; a text file's header line is not a member; the answer counts repeats and blanks.
func TestAudienceUploadsFromSpreadsheets(t *testing.T) {
	t.Parallel()
	api := apitest.StartAudiences(t)
	id := api.CreateAudience(t, "crm")
	base := "/admin/v1/audiences/" + id

	refused := []struct {
		name, path, ctype, body string
		wantStatus              int
		wantCode, wantMessage   string
	}{
		{name: "an xlsx", path: "/members", ctype: "text/csv", body: "PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00xl/sharedStrings.xml",
			wantStatus: 415, wantCode: "not_text", wantMessage: "save it as CSV"},
		{name: "an xls", path: "/members/add", ctype: "text/plain", body: "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00",
			wantStatus: 415, wantCode: "not_text", wantMessage: "spreadsheet"},
		{name: "another binary file", path: "/members", ctype: "text/plain", body: "u1\n\x00\x01\x02",
			wantStatus: 415, wantCode: "not_text", wantMessage: "save it as CSV"},
		{name: "a CSV export without a uid column names its columns", path: "/members", ctype: "text/csv", body: "customer_id,email\nvip-1,a@example.com\n",
			wantStatus: 400, wantCode: "invalid_members", wantMessage: `"customer_id", "email"`},
		{name: "a uid_column the header does not have", path: "/members?uid_column=user", ctype: "text/csv", body: "customer_id,email\nvip-1,a@example.com\n",
			wantStatus: 400, wantCode: "invalid_members", wantMessage: `no column "user"`},
		{name: "uid_column with text", path: "/members?uid_column=customer_id", ctype: "text/plain", body: "vip-1\n",
			wantStatus: 400, wantCode: "invalid_query", wantMessage: "uid_column"},
	}
	for _, tt := range refused {
		status, body, raw := api.Send(t, "tok-editor", "PUT", base+tt.path, tt.ctype, strings.NewReader(tt.body))
		if tt.path != "/members" && !strings.HasPrefix(tt.path, "/members?") {
			status, body, raw = api.Send(t, "tok-editor", "POST", base+tt.path, tt.ctype, strings.NewReader(tt.body))
		}
		require.Equal(t, tt.wantStatus, status, "%s: %s", tt.name, raw)
		e, _ := body["error"].(map[string]any)
		require.NotNil(t, e, raw)
		assert.Equal(t, tt.wantCode, e["code"], tt.name)
		assert.Contains(t, e["message"], tt.wantMessage, tt.name)
		if tt.wantCode == "invalid_members" && tt.path == "/members" {
			assert.Equal(t, []any{"customer_id", "email"}, e["columns"], tt.name)
		}
	}
	assert.Empty(t, api.Members(t, id), "nothing refused was written")

	written := []struct {
		name, method, path, ctype, body          string
		wantLines, wantDup, wantBlank, wantAdded int64
		wantHeader                               any
	}{
		{name: "a CSV export with its uid column named", method: "PUT", path: "/members?uid_column=Customer_ID", ctype: "text/csv",
			body:      "customer_id,email\n vip-1 ,a@example.com\nvip-2,b@example.com\n\nvip-1,c@example.com\n",
			wantLines: 3, wantDup: 1, wantBlank: 1, wantAdded: 2, wantHeader: nil},
		{name: "a text file with a header line and spaces", method: "POST", path: "/members/add", ctype: "text/plain",
			body:      "customer_id\n vip-3\t\n\n\nvip-3\nvip-4 \n",
			wantLines: 3, wantDup: 1, wantBlank: 2, wantAdded: 2, wantHeader: "customer_id"},
	}
	for _, tt := range written {
		status, body, raw := api.Send(t, "tok-editor", tt.method, base+tt.path, tt.ctype, strings.NewReader(tt.body))
		require.Equal(t, http.StatusOK, status, "%s: %s", tt.name, raw)
		assert.Equal(t, tt.wantLines, apitest.Num(body["lines"]), tt.name)
		assert.Equal(t, tt.wantDup, apitest.Num(body["duplicates"]), tt.name)
		assert.Equal(t, tt.wantBlank, apitest.Num(body["blank"]), tt.name)
		assert.Equal(t, tt.wantAdded, apitest.Num(body["added"]), tt.name)
		assert.Equal(t, tt.wantHeader, body["header"], tt.name)
	}
	assert.Equal(t, []string{"vip-1", "vip-2", "vip-3", "vip-4"}, api.Members(t, id), "trimmed, no header, each once")
}
