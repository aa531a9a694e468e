package rules

// Semver is a parsed semantic version (semver.org 2.0): MAJOR.MINOR.PATCH with an optional
// pre-release and build. Missing MINOR or PATCH count as 0 ("8.2" == "8.2.0"), as app builds
// are often written; the build is ignored by every comparison, as semver says.
type Semver struct {
	Major, Minor, Patch uint64
	Pre                 string // "" = a release, which ranks above any pre-release of it
}

// maxSemverPart bounds each numeric part (and numeric pre-release identifier) so that parsing
// cannot overflow.
const maxSemverPart = 1<<53 - 1

// ParseSemver reads "1", "8.2", "8.2.0", "8.2.0-beta.1" or "8.2.0-rc.1+build.5" (a leading "v"
// is allowed). It refuses empty or non-numeric parts, leading zeros in a part ("08.1"), more than
// three parts and empty pre-release identifiers. It does not allocate.
func ParseSemver(s string) (Semver, bool) {
	var v Semver
	if len(s) > 0 && (s[0] == 'v' || s[0] == 'V') {
		s = s[1:]
	}
	core, rest := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '-' || s[i] == '+' {
			core, rest = s[:i], s[i:]
			break
		}
	}
	parts := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	p := 0
	for len(core) > 0 || p == 0 {
		if p == len(parts) {
			return Semver{}, false
		}
		i := 0
		for i < len(core) && core[i] != '.' {
			i++
		}
		n, ok := numericID(core[:i])
		if !ok {
			return Semver{}, false
		}
		*parts[p] = n
		p++
		if i == len(core) {
			break
		}
		core = core[i+1:]
		if core == "" {
			return Semver{}, false // a trailing dot
		}
	}
	if rest != "" && rest[0] == '-' {
		pre, build := rest[1:], ""
		for i := 0; i < len(pre); i++ {
			if pre[i] == '+' {
				pre, build = pre[:i], pre[i:]
				break
			}
		}
		rest = build
		if !validIdents(pre, true) {
			return Semver{}, false
		}
		v.Pre = pre
	}
	if rest != "" && (rest[0] != '+' || !validIdents(rest[1:], false)) {
		return Semver{}, false
	}
	return v, true
}

// numericID reads a numeric part: digits, no leading zero but for "0" itself.
func numericID(s string) (uint64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > maxSemverPart {
			return 0, false
		}
	}
	return n, true
}

// validIdents checks dot-separated identifiers of [0-9A-Za-z-]; pre-release numeric ones may not
// have leading zeros.
func validIdents(s string, pre bool) bool {
	if s == "" {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
			continue
		}
		id := s[start:i]
		if id == "" {
			return false
		}
		if pre && allDigits(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
		start = i + 1
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Compare returns -1, 0 or +1 as v is lower than, equal to or higher than o in semver precedence.
func (v Semver) Compare(o Semver) int {
	for _, d := range [3][2]uint64{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		switch {
		case d[0] < d[1]:
			return -1
		case d[0] > d[1]:
			return 1
		}
	}
	switch {
	case v.Pre == o.Pre:
		return 0
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	}
	return comparePre(v.Pre, o.Pre)
}

// comparePre compares two pre-releases identifier by identifier: numeric ones numerically and
// below alphanumeric ones, alphanumeric ones in ASCII order, a shorter list first when the other
// extends it.
func comparePre(a, b string) int {
	for a != "" && b != "" {
		var x, y string
		x, a = cutDot(a)
		y, b = cutDot(b)
		xn, yn := allDigits(x), allDigits(y)
		switch {
		case xn && yn:
			if len(x) != len(y) { // no leading zeros: the longer is larger
				return cmpInt(len(x), len(y))
			}
			if x != y {
				return cmpStr(x, y)
			}
		case xn:
			return -1
		case yn:
			return 1
		case x != y:
			return cmpStr(x, y)
		}
	}
	return cmpInt(len(a), len(b))
}

func cutDot(s string) (string, string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
