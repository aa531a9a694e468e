package httpapi

import (
	"net/url"
	"strings"

	"popupsvc/internal/popup"
)

// parseRequest validates the homepage query (docs/CONTRACT.md §3) into a domain request.
func parseRequest(uid, platform, appVersion, region, lang string) (popup.Request, *apiError) {
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
	if !popup.ValidRequestCode(lang) {
		return popup.Request{}, badRequest("invalid_lang", "lang must be up to 16 characters of [A-Za-z0-9_-]")
	}
	return popup.Request{UID: uid, Platform: platform, AppVersion: v, Region: region, Lang: lang}, nil
}

// errUIDMalformed answers a uid that is present but not well formed, wherever a uid is read.
var errUIDMalformed = badRequest("invalid_uid", "uid must be "+popup.UIDRule)

// parseFlag reads a boolean query parameter: true/false, 1/0 or yes/no in any case; "" (absent
// or empty) is false. Anything else is a 400 naming the parameter rather than a silent false.
func parseFlag(name, v string) (bool, *apiError) {
	switch strings.ToLower(v) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no", "":
		return false, nil
	}
	return false, queryError(name, "must be true or false (also 1/0, yes/no)")
}

// validID accepts client event and decision ids: 1-64 characters of [A-Za-z0-9_.:-].
func validID(s string) bool { return popup.ValidUID(s) }

// homepageQuery holds the raw fields of the homepage query.
type homepageQuery struct{ uid, platform, appVersion, region, lang string }

// scanQuery reads the homepage fields out of a raw query string without building a url.Values
// map; values are unescaped only when they contain an escape. The first occurrence of a key wins,
// as with url.Values.Get.
func scanQuery(raw string) (homepageQuery, *apiError) {
	var q homepageQuery
	var seen uint8 // bit i: the i-th field has appeared (the first occurrence wins, even if empty)
	for raw != "" {
		var pair string
		if i := strings.IndexByte(raw, '&'); i >= 0 {
			pair, raw = raw[:i], raw[i+1:]
		} else {
			pair, raw = raw, ""
		}
		key, val, _ := strings.Cut(pair, "=")
		var dst *string
		var bit uint8
		switch key {
		case "uid":
			dst, bit = &q.uid, 1<<0
		case "platform":
			dst, bit = &q.platform, 1<<1
		case "app_version":
			dst, bit = &q.appVersion, 1<<2
		case "region":
			dst, bit = &q.region, 1<<3
		case "lang":
			dst, bit = &q.lang, 1<<4
		default:
			continue
		}
		if seen&bit != 0 {
			continue
		}
		seen |= bit
		if strings.ContainsAny(val, "%+") {
			v, err := url.QueryUnescape(val)
			if err != nil {
				return q, badRequest("invalid_query", "query string has a malformed escape in "+key)
			}
			val = v
		}
		*dst = val
	}
	return q, nil
}
