package httpapi

// The homepage query's and the action body's parsers, their tests and fuzz targets are in
// internal/reqparse; the handlers' answers to what they refuse are in uidsig_test.go.

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"popupsvc/internal/reqparse"
)

func TestParseRequestAllocations(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		q, _ := reqparse.ScanQuery("uid=user-123&platform=ios&app_version=8.10.0&region=cn&lang=en")
		_, _ = parseRequest(q.UID, q.Platform, q.AppVersion, q.Region, q.Lang)
	})
	assert.Zero(t, allocs)
}

func TestParseErrorIsA400(t *testing.T) {
	t.Parallel()
	_, perr := reqparse.ScanQuery("uid=%zz")
	ae := parseError(perr)
	assert.Equal(t, 400, ae.status)
	assert.Equal(t, "invalid_query", ae.code)
	assert.Equal(t, perr.Message, ae.message)
	assert.Equal(t, &Error{status: 400, code: "invalid_uid", message: "uid must be 1-64 characters of [A-Za-z0-9_.:-]"}, errUIDMalformed)
}
