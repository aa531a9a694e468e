package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingBody stands for a body that cannot be read in time (a slow client past the read
// timeout): reading it is an error that is not "too large".
type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, errors.New("i/o timeout") }
func (failingBody) Close() error             { return nil }

// TestReadBodyRefusesADeclaredOversizeBodyUnread: a Content-Length over the limit is a 413 at
// once, before a byte is read (a 64 MiB import used to be read until the read timeout and
// answered 400 "could not read the request body").
func TestReadBodyRefusesADeclaredOversizeBodyUnread(t *testing.T) {
	t.Parallel()
	tooLarge := &Error{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: "over"}
	tests := []struct {
		name       string
		length     int64
		wantStatus int
	}{
		{name: "declared over the limit", length: 1025, wantStatus: http.StatusRequestEntityTooLarge},
		{name: "declared within, unreadable", length: 10, wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			req := httptest.NewRequest(http.MethodPost, "/x", nil)
			req.Body, req.ContentLength = failingBody{}, tt.length
			c.Request = req
			_, aerr := readBody(c, 1024, tooLarge)
			require.NotNil(t, aerr)
			assert.Equal(t, tt.wantStatus, aerr.status)
		})
	}
}
