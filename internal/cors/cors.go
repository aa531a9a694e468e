// Package cors holds the allow-list of web origins (POPUP_CORS_ORIGINS) that may call the
// public listener from a browser, and matches a request's Origin against it.
package cors

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Origins is a parsed allow-list: exact origins grouped by length, wildcards
// ("https://*.example.com") as a scheme and a host suffix. The zero value allows nothing.
type Origins struct {
	// byLen[n] holds the exact origins of n bytes. A request's Origin is compared only with the
	// entries of its own length (rarely more than one or two), byte for byte: no string hashing,
	// which cost a map lookup more than the comparisons on the CORS hot path (docs/PERFORMANCE.md).
	byLen     [][]string
	wildcards []wildcard
}

// wildcard allows every origin "<prefix><labels><suffix>" whose labels are one or more DNS labels:
// prefix is "https://", suffix ".example.com" or ".example.com:8443".
type wildcard struct {
	prefix, suffix string
}

// Parse validates and normalises the allow-list entries: each is an origin as a browser sends it
// (scheme://host[:port], http or https, lower case, no path), or a wildcard whose host starts with
// "*." (any subdomain, one level or more, not the domain itself). A default port (:443 on https,
// :80 on http) is dropped, as browsers drop it. Every bad entry is reported, by position.
func Parse(entries []string) (Origins, error) {
	var o Origins
	var errs []error
	for i, e := range entries {
		scheme, host, err := split(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d %q: %w", i+1, e, err))
			continue
		}
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			o.wildcards = append(o.wildcards, wildcard{prefix: scheme + "://", suffix: "." + rest})
			continue
		}
		o.addExact(scheme + "://" + host)
	}
	if len(errs) > 0 {
		return Origins{}, errors.Join(errs...)
	}
	return o, nil
}

// addExact adds origin to byLen, once.
func (o *Origins) addExact(origin string) {
	if len(origin) >= len(o.byLen) {
		o.byLen = append(o.byLen, make([][]string, len(origin)+1-len(o.byLen))...)
	}
	if !slices.Contains(o.byLen[len(origin)], origin) {
		o.byLen[len(origin)] = append(o.byLen[len(origin)], origin)
	}
}

// split checks one entry and returns its scheme and host[:port], lower case, default port dropped.
func split(e string) (scheme, host string, err error) {
	e = strings.ToLower(strings.TrimSpace(e))
	if e == "*" || e == "null" {
		return "", "", errors.New("name each origin (https://app.example.com) or a domain's subdomains (https://*.example.com)")
	}
	scheme, host, ok := strings.Cut(e, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return "", "", errors.New("want http://host[:port] or https://host[:port]")
	}
	if host == "" || strings.ContainsAny(host, "/?#@ \\") {
		return "", "", errors.New("an origin is scheme://host[:port]: no path, query, user or trailing slash")
	}
	name, port, hasPort := strings.Cut(host, ":")
	if hasPort {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", "", fmt.Errorf("port %q is not 1-65535", port)
		}
		if (scheme == "https" && n == 443) || (scheme == "http" && n == 80) {
			hasPort = false
		}
	}
	labels := strings.TrimPrefix(name, "*.")
	if strings.Contains(labels, "*") {
		return "", "", errors.New(`a wildcard is "*." before the domain, once (https://*.example.com)`)
	}
	if !validHost(labels) {
		return "", "", fmt.Errorf("%q is not a host name", labels)
	}
	if name != labels && !strings.Contains(labels, ".") {
		return "", "", errors.New("a wildcard needs a domain of two labels or more (https://*.example.com), not a top-level domain")
	}
	if hasPort {
		name += ":" + port
	}
	return scheme, name, nil
}

// validHost reports whether h is dot-separated labels of [a-z0-9-] (a name or an IPv4 address),
// none empty and none starting or ending with a hyphen.
func validHost(h string) bool {
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			if c := h[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		// h[start:i] is one label
		if i == start || h[start] == '-' || h[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// Enabled reports whether any origin is allowed.
func (o *Origins) Enabled() bool { return len(o.byLen) > 0 || len(o.wildcards) > 0 }

// Allowed reports whether a request's Origin header value is on the list. It allocates nothing.
func (o *Origins) Allowed(origin string) bool {
	if len(origin) < len(o.byLen) {
		for _, e := range o.byLen[len(origin)] {
			if e == origin {
				return true
			}
		}
	}
	for _, w := range o.wildcards {
		if len(origin) <= len(w.prefix)+len(w.suffix) || !strings.HasPrefix(origin, w.prefix) || !strings.HasSuffix(origin, w.suffix) {
			continue
		}
		// The subdomain part must be host labels: no port, path or user slipped in before the suffix.
		if validHost(origin[len(w.prefix) : len(origin)-len(w.suffix)]) {
			return true
		}
	}
	return false
}
