package popup

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LinkSchemes is the allow-list of URL schemes a popup's links (link_url, buttons[].link_url)
// may use: every app opens whatever link it is given, so a link's scheme is chosen from a list,
// never guessed safe. The zero value allows http and https only, as does the default
// POPUP_LINK_SCHEMES; an app's own deep-link schemes ("myapp") are added there. image_url is
// always http or https, whatever the list says.
type LinkSchemes struct {
	names []string // lower-case; nil = http, https
}

// neverLinkSchemes run code or read local files in whatever opens them: no configuration may
// allow them.
var neverLinkSchemes = [...]string{"javascript", "vbscript", "data", "file"}

// ParseLinkSchemes checks an allow-list of lower-case scheme names (RFC 3986: a letter, then
// letters, digits, "+", "-" or "."), refusing an empty list and the schemes that run code.
func ParseLinkSchemes(names []string) (LinkSchemes, error) {
	if len(names) == 0 {
		return LinkSchemes{}, errors.New("must list at least one scheme, such as http,https")
	}
	var errs []error
	for i, n := range names {
		switch {
		case !validScheme(n) || n != strings.ToLower(n):
			errs = append(errs, errors.New("item "+strconv.Itoa(i+1)+" ("+strconv.Quote(n)+") is not a lower-case URL scheme name such as https or myapp"))
		case isNeverScheme(n):
			errs = append(errs, errors.New(n+" links run code or read local files and are never allowed"))
		}
	}
	if len(errs) > 0 {
		return LinkSchemes{}, errors.Join(errs...)
	}
	return LinkSchemes{names: append([]string(nil), names...)}, nil
}

func isNeverScheme(s string) bool {
	for _, n := range neverLinkSchemes {
		if strings.EqualFold(s, n) {
			return true
		}
	}
	return false
}

// Allows reports whether scheme (any case) is on the list.
func (l LinkSchemes) Allows(scheme string) bool {
	if l.names == nil {
		return isWebScheme(scheme)
	}
	for _, n := range l.names {
		if strings.EqualFold(n, scheme) {
			return true
		}
	}
	return false
}

// String lists the schemes as an error message shows them: "http, https, myapp".
func (l LinkSchemes) String() string {
	if l.names == nil {
		return "http, https"
	}
	return strings.Join(l.names, ", ")
}

func isWebScheme(s string) bool { return strings.EqualFold(s, "http") || strings.EqualFold(s, "https") }

// linkProblem returns what is wrong with URL s ("" = nothing), given the schemes allowed.
// A URL must parse with net/url, be absolute, carry no white space or control or format
// characters (a bidi override can disguise a link), and have something after the scheme: a host
// for http and https, a host or path for an app's scheme.
func linkProblem(s string, allowed func(string) bool, allowedList string) string {
	if utf8.RuneCountInString(s) > maxURLLen {
		return "must be at most " + strconv.Itoa(maxURLLen) + " characters"
	}
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return "must not contain spaces or control characters"
		}
	}
	want := "must be an absolute URL with one of the schemes " + allowedList
	i := strings.Index(s, ":")
	if i <= 0 || !validScheme(s[:i]) {
		return want
	}
	if !allowed(s[:i]) {
		return "scheme " + strconv.Quote(strings.ToLower(s[:i])) + " is not allowed: " + want
	}
	u, err := url.Parse(s)
	if err != nil {
		return "is not a valid URL: " + strings.TrimPrefix(err.Error(), "parse "+strconv.Quote(s)+": ")
	}
	if isWebScheme(u.Scheme) {
		if u.Host == "" || u.Opaque != "" {
			return "must name a host, as in https://example.com/path"
		}
		return ""
	}
	if u.Host == "" && u.Opaque == "" && strings.Trim(u.Path, "/") == "" {
		return "must have a host or path after the scheme, as in myapp://path"
	}
	return ""
}
