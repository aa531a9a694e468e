package bareanswer

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestAnswerHasItsSizeAndHeaders: the body is size bytes of valid JSON (or the JSON's frame when
// size is smaller), and Write sends it with popup-api's content type and its length.
func TestAnswerHasItsSizeAndHeaders(t *testing.T) {
	for _, size := range []int{0, 33, 272, 1000} {
		a := New(size)
		want := max(size, New(0).Len())
		if a.Len() != want {
			t.Errorf("New(%d).Len() = %d, want %d", size, a.Len(), want)
		}
		w := httptest.NewRecorder()
		a.Write(w)
		if !json.Valid(w.Body.Bytes()) || w.Body.Len() != want {
			t.Errorf("New(%d) wrote %d bytes, valid JSON %t", size, w.Body.Len(), json.Valid(w.Body.Bytes()))
		}
		if got := w.Header().Get("Content-Length"); got != strconv.Itoa(want) {
			t.Errorf("New(%d): Content-Length %q", size, got)
		}
		if got := w.Header().Get("Content-Type"); got != "application/json; charset=utf-8" {
			t.Errorf("New(%d): Content-Type %q", size, got)
		}
	}
}
