// Package uidauth verifies that the gateway vouched for a uid: an HMAC-SHA256 signature over
// "<t>.<uid>" carried in the X-Popup-Uid-Sig header (docs/SECURITY.md has the trust model).
package uidauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header is the request header that carries the signature:
//
//	X-Popup-Uid-Sig: t=<unix seconds>,v1=<hex HMAC-SHA256(key, "<t>.<uid>")>
//
// The two fields may come in either order; t is signed exactly as written in the header.
const Header = "X-Popup-Uid-Sig"

// MinKeyLen is the shortest key accepted: 32 bytes, the output size of SHA-256.
const MinKeyLen = 32

// MaxFutureSkew is how far ahead of this process's clock a signature's t may be: the gateway's
// clock may run a little fast. A t behind the clock is covered by the max age.
const MaxFutureSkew = 30 * time.Second

// Limits of the header: t has 1-12 digits (Unix seconds up to year 33658), v1 is 64 hex digits.
const (
	maxTDigits   = 12
	macHexLen    = 2 * sha256.Size
	maxHeaderLen = len("t=,v1=") + maxTDigits + macHexLen
)

// Verification failures. The caller maps them to answers; none of them allocates.
var (
	ErrMissing   = errors.New("uid signature missing")
	ErrMalformed = errors.New("uid signature malformed")
	ErrExpired   = errors.New("uid signature older than the max age")
	ErrFuture    = errors.New("uid signature timestamp too far in the future")
	ErrMismatch  = errors.New("uid signature does not match")
)

// Verifier checks signatures against one or more keys (several during a key rotation). It is
// safe for concurrent use; a verification allocates nothing in steady state.
type Verifier struct {
	keys      []*keyHash
	maxAge    int64 // seconds
	maxFuture int64 // seconds
}

// keyHash pools the HMAC state of one key: hmac.New costs ~7 allocations, and a pooled hash
// restored by Reset costs none (hmac keeps the keyed inner and outer states after the first use).
type keyHash struct{ pool sync.Pool }

// scratch is one pooled HMAC with buffers that live on the heap with it, so that writing the
// message and summing do not make a stack buffer escape.
type scratch struct {
	h   hash.Hash
	buf [128]byte
	sum [sha256.Size]byte
}

// New returns a Verifier for keys (each at least MinKeyLen bytes, used as written) that accepts
// a signature whose t is at most maxAge old (whole seconds, at least one).
func New(keys []string, maxAge time.Duration) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("uidauth: no key")
	}
	if maxAge < time.Second {
		return nil, errors.New("uidauth: max age must be at least 1s")
	}
	v := &Verifier{maxAge: int64(maxAge / time.Second), maxFuture: int64(MaxFutureSkew / time.Second)}
	for i, k := range keys {
		if len(k) < MinKeyLen {
			return nil, errors.New("uidauth: key " + strconv.Itoa(i+1) + " is shorter than " + strconv.Itoa(MinKeyLen) + " bytes")
		}
		key := []byte(k)
		kh := &keyHash{}
		kh.pool.New = func() any { return &scratch{h: hmac.New(sha256.New, key)} }
		v.keys = append(v.keys, kh)
	}
	return v, nil
}

// Verify reports whether header is a valid signature of uid at now by one of the keys. The
// uid's own format is the caller's to check first.
func (v *Verifier) Verify(header, uid string, now time.Time) error {
	if header == "" {
		return ErrMissing
	}
	var mac [sha256.Size]byte
	ts, t, ok := parse(header, &mac)
	if !ok {
		return ErrMalformed
	}
	sec := now.Unix()
	switch {
	case sec-t > v.maxAge:
		return ErrExpired
	case t-sec > v.maxFuture:
		return ErrFuture
	}
	for _, k := range v.keys {
		if k.matches(ts, uid, mac[:]) {
			return nil
		}
	}
	return ErrMismatch
}

// matches computes HMAC(key, ts + "." + uid) and compares it with mac in constant time.
func (k *keyHash) matches(ts, uid string, mac []byte) bool {
	s := k.pool.Get().(*scratch)
	s.h.Reset()
	n := copy(s.buf[:], ts)
	s.buf[n] = '.'
	n++
	for rest := uid; ; {
		c := copy(s.buf[n:], rest)
		s.h.Write(s.buf[:n+c])
		if rest = rest[c:]; rest == "" {
			break
		}
		n = 0
	}
	ok := hmac.Equal(s.h.Sum(s.sum[:0]), mac)
	k.pool.Put(s)
	return ok
}

// parse reads "t=<digits>,v1=<64 hex>" (either order, each field once, nothing else) into the
// timestamp as written, its value and the MAC. It is hand-written for the hot path: no
// allocation, no fmt, no regexp.
func parse(h string, mac *[sha256.Size]byte) (ts string, t int64, ok bool) {
	if len(h) > maxHeaderLen {
		return "", 0, false
	}
	var haveT, haveMAC bool
	for h != "" {
		field := h
		if i := strings.IndexByte(h, ','); i >= 0 {
			field, h = h[:i], h[i+1:]
			if h == "" {
				return "", 0, false // trailing comma
			}
		} else {
			h = ""
		}
		switch {
		case len(field) > 2 && field[:2] == "t=":
			if haveT {
				return "", 0, false
			}
			ts = field[2:]
			if t, ok = parseDigits(ts); !ok {
				return "", 0, false
			}
			haveT = true
		case len(field) > 3 && field[:3] == "v1=":
			if haveMAC || !decodeHex(mac, field[3:]) {
				return "", 0, false
			}
			haveMAC = true
		default:
			return "", 0, false
		}
	}
	return ts, t, haveT && haveMAC
}

// parseDigits parses 1-maxTDigits decimal digits (no sign, no spaces).
func parseDigits(s string) (int64, bool) {
	if len(s) == 0 || len(s) > maxTDigits {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// decodeHex decodes exactly 64 hex digits (either case) into dst.
func decodeHex(dst *[sha256.Size]byte, s string) bool {
	if len(s) != macHexLen {
		return false
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// AppendSignature appends the header value that signs uid at t with key: what the gateway
// sends. It is the reference implementation for gateways and tests, not a hot-path function.
func AppendSignature(dst []byte, key, uid string, t time.Time) []byte {
	ts := strconv.AppendInt(nil, t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(key))
	m.Write(ts)
	m.Write([]byte{'.'})
	m.Write([]byte(uid))
	dst = append(dst, "t="...)
	dst = append(dst, ts...)
	dst = append(dst, ",v1="...)
	return hex.AppendEncode(dst, m.Sum(nil))
}

// Sign returns the header value that signs uid at t with key.
func Sign(key, uid string, t time.Time) string { return string(AppendSignature(nil, key, uid, t)) }
