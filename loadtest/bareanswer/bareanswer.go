// Package bareanswer is the benchmarks' bare answer: a fixed JSON body of a popup answer's size,
// written with the headers popup-api's answer has. loadtest/refserver answers it alone (the
// reference every throughput ratio divides by); loadtest/floorserver after the Redis work of an
// impression.
package bareanswer

import (
	"net/http"
	"strconv"
	"strings"
)

// Answer is a body of a given size and its Content-Length.
type Answer struct {
	body   []byte
	length []string
}

// New is the answer of size bytes (at least the JSON's own frame).
func New(size int) Answer {
	prefix := `{"popup":{"id":1,"title":"`
	suffix := `"},"decision_id":"0123456789abcdef-1","config_version":1}`
	body := []byte(prefix + strings.Repeat("x", max(size-len(prefix)-len(suffix), 0)) + suffix)
	return Answer{body: body, length: []string{strconv.Itoa(len(body))}}
}

// Len is the body's size.
func (a Answer) Len() int { return len(a.body) }

// Write writes the answer to w.
func (a Answer) Write(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json; charset=utf-8"}
	h["Content-Length"] = a.length
	w.Write(a.body) // a benchmark's answer: a failed write is the client's
}
