package apitest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openAPIPath is api/openapi.yaml, wherever the test runs from.
func openAPIPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "api", "openapi.yaml")
}

// SpecChecker validates real answers of a running popup-api against api/openapi.yaml.
type SpecChecker struct {
	doc    *openapi3.T
	router routers.Router
	client *http.Client
}

// NewSpecChecker loads and validates the document, and points its servers at the listeners of
// the instances under test (the router matches a request to an operation by host and path).
func NewSpecChecker(t *testing.T, hosts ...string) *SpecChecker {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIPath())
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "api/openapi.yaml is not a valid OpenAPI 3 document")
	doc.Servers = nil
	for _, h := range hosts {
		doc.Servers = append(doc.Servers, &openapi3.Server{URL: "http://" + h})
	}
	// pprof's index is an HTML page; its body is checked as a string.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	r, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	return &SpecChecker{doc: doc, router: r, client: &http.Client{Timeout: 10 * time.Second}}
}

// Call is one request and the statuses it may answer.
type Call struct {
	Name    string
	Method  string
	URL     string
	Body    string
	Header  map[string]string
	Want    []int
	ErrCode string // the error code a 4xx must carry, when it matters
}

// Do sends c, asserts the status is one of c.Want and that the answer validates against the
// document: status declared for the operation, headers, content type and body schema. Answers
// to a path or method the document does not have (404, 405) must still be the documented Error.
func (s *SpecChecker) Do(t *testing.T, c Call) (status int, body []byte, header http.Header) {
	t.Helper()
	req, err := http.NewRequest(c.Method, c.URL, strings.NewReader(c.Body))
	require.NoError(t, err)
	if c.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	assert.Contains(t, c.Want, res.StatusCode, "%s %s: %s", c.Method, c.URL, body)
	if c.ErrCode != "" && res.StatusCode >= 400 {
		assert.Contains(t, string(body), `"code":"`+c.ErrCode+`"`)
	}

	route, params, err := s.router.FindRoute(req)
	if err != nil {
		// Not an operation of the document: only the generic 404/405 answers (and on the admin
		// listener the 401 that comes before routing) may come back.
		require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized}, res.StatusCode,
			"%s %s is not in api/openapi.yaml (%v) yet answered %d", c.Method, c.URL, err, res.StatusCode)
		s.matchesErrorSchema(t, body)
		return res.StatusCode, body, res.Header
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if c.Method == http.MethodHead {
		in.Options.ExcludeResponseBody = true
	}
	assert.NoError(t, openapi3filter.ValidateResponse(context.Background(), in),
		"%s %s answered %d %s: not as api/openapi.yaml says", c.Method, c.URL, res.StatusCode, body)
	return res.StatusCode, body, res.Header
}

func (s *SpecChecker) matchesErrorSchema(t *testing.T, body []byte) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(body, &v), "%s", body)
	assert.NoError(t, s.doc.Components.Schemas["ErrorBody"].Value.VisitJSON(v), "%s", body)
}

// AdminClient sends admin requests through a SpecChecker, with the admin token unless the
// header names another.
type AdminClient struct {
	Spec *SpecChecker
	Base string // http://host:port of the admin listener
}

// Answer is an answer an AdminClient read: Body is the JSON decoded.
type Answer struct {
	Status int
	Body   map[string]any
	Raw    string
	ETag   string
}

// Do sends method path with body and asserts the status is want and the answer is as
// api/openapi.yaml says.
func (c AdminClient) Do(t *testing.T, method, path, body string, header map[string]string, want int) Answer {
	t.Helper()
	if header == nil {
		header = map[string]string{}
	}
	if header["Authorization"] == "" {
		header["Authorization"] = "Bearer " + Token
	}
	status, raw, h := c.Spec.Do(t, Call{Method: method, URL: c.Base + path, Body: body, Header: header, Want: []int{want}})
	a := Answer{Status: status, Raw: string(raw), ETag: h.Get("ETag")}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &a.Body), "%s", raw)
	}
	return a
}

// ErrorOf is an error answer's code and its first field ("" for none).
func (a Answer) ErrorOf(t *testing.T) (code, field string) {
	t.Helper()
	return ErrorOf(t, Response{Status: a.Status, Body: a.Body, Raw: a.Raw})
}
