package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"popupsvc/internal/popup"
)

// The decoding of JSON bodies field by field, naming every problem with its path: the popup body
// (internal/admin/popups) and the conversions batch.

// InputField is one key of a JSON object and where its value goes: decoded into Dst, or by
// Decode, which names its problems under path (the key's full path).
type InputField struct {
	Key    string
	Dst    any
	Decode func(raw json.RawMessage, path string) []popup.FieldError
}

// DecodeObject decodes the JSON object raw into fields, naming every problem with its path
// (path.key): a value of the wrong type, a time that is not RFC 3339, a key that is not one of
// fields (what says what the object is), all at once.
func DecodeObject(raw json.RawMessage, path, what string, fields []InputField) []popup.FieldError {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return []popup.FieldError{{Field: path, Message: "must be " + what + " (a JSON object)"}}
	}
	return DecodeFields(obj, path+".", what, fields)
}

// DecodeFields decodes obj's keys into fields and names each key that is none of them; prefix
// ("" at the top of a body, "targeting." inside one) leads every field an error names.
func DecodeFields(obj map[string]json.RawMessage, prefix, what string, fields []InputField) []popup.FieldError {
	var fes []popup.FieldError
	for _, f := range fields {
		v, ok := obj[f.Key]
		if !ok {
			continue
		}
		if f.Decode != nil {
			fes = append(fes, f.Decode(v, prefix+f.Key)...)
			continue
		}
		fes = append(fes, DecodeValue(v, prefix, f.Key, f.Dst)...)
	}
	var unknown []string
	for k := range obj {
		if !slices.ContainsFunc(fields, func(f InputField) bool { return f.Key == k }) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		fes = append(fes, popup.FieldError{Field: prefix + k, Message: "is not a field of " + what})
	}
	return fes
}

// DecodeValue decodes the value v of key into dst, naming a problem as prefix+key (or the nested
// field the decoder names).
func DecodeValue(v json.RawMessage, prefix, key string, dst any) []popup.FieldError {
	d := json.NewDecoder(bytes.NewReader(v))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		fe := FieldDecodeError(key, err)
		fe.Field = prefix + fe.Field
		return []popup.FieldError{fe}
	}
	return nil
}

// FieldDecodeError turns a decoding error of key's value into a FieldError naming the field as
// exactly as the decoder lets us (the nested key for an unknown or mistyped nested field).
func FieldDecodeError(key string, err error) popup.FieldError {
	if key == "start_at" || key == "end_at" || key == "planned_end_at" {
		return popup.FieldError{Field: key, Message: "must be an RFC 3339 time such as 2026-12-01T00:00:00Z, or null"}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := key
		if te.Field != "" {
			field = key + "." + te.Field
		}
		return popup.FieldError{Field: field, Message: TypeMismatch(te)}
	}
	const unknownPrefix = "json: unknown field "
	if msg := err.Error(); strings.HasPrefix(msg, unknownPrefix) {
		if name, uerr := strconv.Unquote(strings.TrimPrefix(msg, unknownPrefix)); uerr == nil {
			return popup.FieldError{Field: key + "." + name, Message: "is not a field of " + key}
		}
	}
	return popup.FieldError{Field: key, Message: "is not valid: " + strings.TrimPrefix(err.Error(), "json: ")}
}
