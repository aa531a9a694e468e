package httpapi

import (
	"strings"

	"popupsvc/internal/popup"
	"popupsvc/internal/reqparse"
)

// parseRequest validates the homepage query (docs/CONTRACT.md §3) into a domain request.
func parseRequest(uid, platform, appVersion, region, lang string) (popup.Request, *Error) {
	if uid == "" {
		return popup.Request{}, badRequest("invalid_uid", "uid is required")
	}
	if !popup.ValidUID(uid) {
		return popup.Request{}, errUIDMalformed
	}
	switch platform {
	case popup.PlatformIOS, popup.PlatformAndroid, popup.PlatformWeb:
	case "":
		return popup.Request{}, badRequest("invalid_platform", "platform is required: ios, android or web")
	default:
		return popup.Request{}, badRequest("invalid_platform", "platform must be ios, android or web")
	}
	if appVersion == "" {
		return popup.Request{}, badRequest("invalid_app_version", "app_version is required, as dotted numbers like 8.10.0")
	}
	v, err := popup.ParseVersion(appVersion)
	if err != nil {
		return popup.Request{}, badRequest("invalid_app_version", "app_version must be dotted numbers like 8.10.0 (1 to 4 parts)")
	}
	if !popup.ValidRequestCode(region) {
		return popup.Request{}, badRequest("invalid_region", "region must be up to 16 characters of [A-Za-z0-9_-]")
	}
	if !popup.ValidLang(lang) {
		return popup.Request{}, badRequest("invalid_lang", "lang must be "+popup.LangRule)
	}
	return popup.Request{UID: uid, Platform: platform, AppVersion: v, Region: region, Lang: lang}, nil
}

// errUIDMalformed answers a uid that is present but not well formed, wherever a uid is read.
var errUIDMalformed = parseError(reqparse.ErrUIDMalformed)

// parseError is the 400 of an input reqparse refuses (the homepage query, the decision body, the
// action body), naming the input in fields when the refusal is about one (an attribute, say).
func parseError(e *reqparse.Error) *Error {
	ae := badRequest(e.Code, e.Message)
	if e.Field != "" {
		ae.fields = []popup.FieldError{{Field: e.Field, Message: e.Message}}
	}
	return ae
}

// parseFlag reads a boolean query parameter: true/false, 1/0 or yes/no in any case; "" (absent
// or empty) is false. Anything else is a 400 naming the parameter rather than a silent false.
func parseFlag(name, v string) (bool, *Error) {
	switch strings.ToLower(v) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no", "":
		return false, nil
	}
	return false, queryError(name, "must be true or false (also 1/0, yes/no)")
}
