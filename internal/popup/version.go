package popup

import "errors"

// ErrInvalidVersion is returned by ParseVersion. It is a fixed value so parsing a request's
// app_version never allocates, even when the version is bad.
var ErrInvalidVersion = errors.New("invalid version: want 1 to 4 dot-separated numbers, each 0-999999")

// maxVersionPart bounds each part so that a part always fits a uint32 and a MySQL INT.
const maxVersionPart = 999999

// Version is a parsed dotted numeric version, compared numerically part by part, so that
// 8.10.0 > 8.9.9 (a string comparison gets this wrong) and missing parts count as zero
// (8.10 == 8.10.0). It has up to 4 parts, each 0..999999. The zero Version is "0".
type Version [4]uint32

// ParseVersion parses "1", "8.10", "8.10.0" or "8.10.0.1234". It rejects "", empty parts
// ("1.", ".1", "1..2"), anything but ASCII digits and dots (signs, spaces, letters such as
// "8.1.0-beta"), more than 4 parts and parts above 999999. Leading zeros are allowed ("8.01" == "8.1").
// It does not allocate: it runs on every homepage request.
func ParseVersion(s string) (Version, error) {
	var v Version
	part, digits := 0, 0
	var n uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + uint32(c-'0') // n <= 999999 here, so this cannot overflow
			if n > maxVersionPart {
				return Version{}, ErrInvalidVersion
			}
			digits++
		case c == '.' && digits > 0 && part < len(v)-1:
			v[part] = n
			part, digits, n = part+1, 0, 0
		default:
			return Version{}, ErrInvalidVersion
		}
	}
	if digits == 0 { // "" or a trailing dot
		return Version{}, ErrInvalidVersion
	}
	v[part] = n
	return v, nil
}

// Compare returns -1 if v < o, 0 if they are equal and +1 if v > o.
func (v Version) Compare(o Version) int {
	for i := range v {
		switch {
		case v[i] < o[i]:
			return -1
		case v[i] > o[i]:
			return 1
		}
	}
	return 0
}
