// Package jsonx decodes JSON on the busy paths with json-iterator while accepting and rejecting
// exactly what encoding/json does.
//
// json-iterator alone is laxer: it accepts raw control characters inside strings and keys,
// which encoding/json rejects. encoding/json's Valid is a non-allocating scan, so Valid followed
// by json-iterator still costs well under encoding/json's Unmarshal (BenchmarkUnmarshal).
package jsonx

import (
	"encoding/json"

	jsoniter "github.com/json-iterator/go"
)

var api = jsoniter.ConfigCompatibleWithStandardLibrary

// Unmarshal decodes data into v like encoding/json.Unmarshal: the same inputs refused (with
// encoding/json's own error), the same values decoded. One difference: invalid UTF-8 inside a
// string becomes U+FFFD with encoding/json and stays as it is here; callers that accept only
// ASCII refuse both alike.
func Unmarshal(data []byte, v any) error {
	if !json.Valid(data) {
		return json.Unmarshal(data, v) // its syntax error; it checks before it writes to v
	}
	return api.Unmarshal(data, v)
}
