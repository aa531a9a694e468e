package uidauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The standard library only, no testify: FuzzUIDSig is fuzzed by every make test, and go test
// -fuzz compiles everything this package's tests import again with coverage instrumentation:
// testify's tree, net/http included, is costly (docs/RELIABILITY.md, "Hostile input: fuzzing").

const (
	oldKey = "old-key-0123456789abcdef0123456789abcdef"
	newKey = "new-key-0123456789abcdef0123456789abcdef"
	badKey = "bad-key-0123456789abcdef0123456789abcdef"
)

var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestVerify(t *testing.T) {
	t.Parallel()
	v, err := New([]string{newKey, oldKey}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sig := func(key, uid string, at time.Time) string { return Sign(key, uid, at) }
	ts := strconv.FormatInt(now.Unix(), 10)
	good := sig(newKey, "u1", now)
	mac := good[strings.Index(good, "v1=")+3:]
	longUID := strings.Repeat("long-uid.", 20) // past the scratch buffer: hashed in chunks
	tests := []struct {
		name   string
		header string
		uid    string
		want   error
	}{
		{"signed with the first key", good, "u1", nil},
		{"signed with the second key of a rotation", sig(oldKey, "u1", now), "u1", nil},
		{"fields in the other order", "v1=" + mac + ",t=" + ts, "u1", nil},
		{"upper-case hex", "t=" + ts + ",v1=" + strings.ToUpper(mac), "u1", nil},
		{"a uid longer than the scratch buffer", sig(newKey, longUID, now), longUID, nil},
		{"exactly max age old", sig(newKey, "u1", now.Add(-5*time.Minute)), "u1", nil},
		{"ahead within the clock skew", sig(newKey, "u1", now.Add(MaxFutureSkew)), "u1", nil},

		{"wrong key", sig(badKey, "u1", now), "u1", ErrMismatch},
		{"tampered uid", good, "u2", ErrMismatch},
		{"uid prefix", good, "u", ErrMismatch},
		{"tampered t", "t=" + strconv.FormatInt(now.Unix()-1, 10) + ",v1=" + mac, "u1", ErrMismatch},
		{"t with a leading zero is another message", "t=0" + ts + ",v1=" + mac, "u1", ErrMismatch},
		{"tampered mac", "t=" + ts + ",v1=" + flip(mac), "u1", ErrMismatch},
		{"expired", sig(newKey, "u1", now.Add(-5*time.Minute-time.Second)), "u1", ErrExpired},
		{"long expired", sig(newKey, "u1", time.Unix(0, 0)), "u1", ErrExpired},
		{"too far in the future", sig(newKey, "u1", now.Add(MaxFutureSkew+time.Second)), "u1", ErrFuture},

		{"empty", "", "u1", ErrMissing},
		{"only t", "t=" + ts, "u1", ErrMalformed},
		{"only v1", "v1=" + mac, "u1", ErrMalformed},
		{"empty t", "t=,v1=" + mac, "u1", ErrMalformed},
		{"t not a number", "t=12a,v1=" + mac, "u1", ErrMalformed},
		{"negative t", "t=-" + ts + ",v1=" + mac, "u1", ErrMalformed},
		{"signed t", "t=+" + ts + ",v1=" + mac, "u1", ErrMalformed},
		{"t over 12 digits", "t=0000000" + ts + ",v1=" + mac, "u1", ErrMalformed},
		{"short mac", "t=" + ts + ",v1=" + mac[:62], "u1", ErrMalformed},
		{"long mac", "t=" + ts + ",v1=" + mac + "00", "u1", ErrMalformed},
		{"mac not hex", "t=" + ts + ",v1=" + mac[:63] + "g", "u1", ErrMalformed},
		{"t twice", good + ",t=" + ts, "u1", ErrMalformed},
		{"v1 twice", "t=" + ts + ",v1=" + mac + ",v1=" + mac, "u1", ErrMalformed},
		{"trailing comma", good + ",", "u1", ErrMalformed},
		{"leading comma", "," + good, "u1", ErrMalformed},
		{"space after the comma", "t=" + ts + ", v1=" + mac, "u1", ErrMalformed},
		{"unknown field", good + ",v2=ab", "u1", ErrMalformed},
		{"upper-case field name", "T=" + ts + ",V1=" + mac, "u1", ErrMalformed},
		{"semicolons", "t=" + ts + ";v1=" + mac, "u1", ErrMalformed},
		{"a bare mac", mac, "u1", ErrMalformed},
		{"garbage", "Bearer abc", "u1", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v.Verify(tt.header, tt.uid, now); got != tt.want {
				t.Errorf("Verify(%q, %q) = %v, want %v", tt.header, tt.uid, got, tt.want)
			}
		})
	}
}

// flip changes the last hex digit of a MAC.
func flip(mac string) string {
	last := byte('0')
	if mac[len(mac)-1] == '0' {
		last = '1'
	}
	return mac[:len(mac)-1] + string(last)
}

// TestSignMatchesTheDocumentedVector pins the vector of docs/SECURITY.md, computed with
// printf '%s' 1767225600.user-42 | openssl dgst -sha256 -hmac example-key-0123456789abcdef0123456789abcdef
func TestSignMatchesTheDocumentedVector(t *testing.T) {
	t.Parallel()
	const key = "example-key-0123456789abcdef0123456789abcdef"
	const want = "t=1767225600,v1=854e9b8f81533ee16142d21035b05344f2414d316bc38d000c1a52cabea7c9b8"
	at := time.Unix(1767225600, 0)
	if got := Sign(key, "user-42", at); got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
	v, err := New([]string{key}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(want, "user-42", at); err != nil {
		t.Errorf("Verify(the documented vector): %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		keys   []string
		maxAge time.Duration
		want   string
	}{
		{"no key", nil, time.Minute, "no key"},
		{"a short key", []string{newKey, strings.Repeat("k", MinKeyLen-1)}, time.Minute, "key 2 is shorter than 32 bytes"},
		{"max age under a second", []string{newKey}, 500 * time.Millisecond, "at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.keys, tt.maxAge)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestVerifyAllocatesNothing(t *testing.T) {
	if raceOn {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	v, err := New([]string{newKey, oldKey}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	header := Sign(oldKey, "user-123", now) // the second key: both are tried
	allocs := testing.AllocsPerRun(1000, func() { _ = v.Verify(header, "user-123", now) })
	if allocs != 0 {
		t.Errorf("Verify allocates %v times, want none", allocs)
	}
}

func FuzzUIDSig(f *testing.F) {
	f.Add(Sign(newKey, "u1", now), "u1", now.Unix())
	f.Add("t=1767225600,v1=", "u", int64(0))
	f.Add("v1=00,t=1", "user-1", int64(1))
	f.Add("t=1,t=2,v1=3", "", int64(-1))
	v, err := New([]string{newKey}, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header, uid string, sec int64) {
		at := time.Unix(sec, 0)
		// Arbitrary input never panics, and what is accepted carries the right MAC of its t.
		if err := v.Verify(header, uid, at); err == nil {
			assertSignedBy(t, newKey, header, uid)
		}
		// Whatever is signed with a current key at a representable time verifies.
		if sec >= 0 && sec < 1e12 {
			if err := v.Verify(Sign(newKey, uid, at), uid, at); err != nil {
				t.Errorf("uid %q at %d: %v", uid, sec, err)
			}
		}
	})
}

// assertSignedBy checks that header's v1 is HMAC(key, "<its t>.<uid>").
func assertSignedBy(t *testing.T, key, header, uid string) {
	t.Helper()
	var mac [sha256.Size]byte
	ts, _, ok := parse(header, &mac)
	if !ok {
		t.Fatalf("accepted an unparseable header %q", header)
	}
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(ts + "." + uid))
	if !hmac.Equal(m.Sum(nil), mac[:]) {
		t.Errorf("accepted %q for uid %q", header, uid)
	}
}

func BenchmarkVerify(b *testing.B) {
	benchmarks := []struct {
		name string
		keys []string
		key  string
	}{
		{"one key", []string{newKey}, newKey},
		{"second of two keys", []string{newKey, oldKey}, oldKey},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			v, err := New(bm.keys, 5*time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			header := Sign(bm.key, "user-1234567890", now)
			b.ReportAllocs()
			for b.Loop() {
				if err := v.Verify(header, "user-1234567890", now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHMACNewPerRequest is the straightforward alternative to the pooled HMAC, for scale.
func BenchmarkHMACNewPerRequest(b *testing.B) {
	header := Sign(newKey, "user-1234567890", now)
	b.ReportAllocs()
	for b.Loop() {
		var mac [sha256.Size]byte
		ts, _, _ := parse(header, &mac)
		m := hmac.New(sha256.New, []byte(newKey))
		m.Write([]byte(ts + ".user-1234567890"))
		if !hmac.Equal(m.Sum(nil), mac[:]) {
			b.Fatal("mismatch")
		}
	}
}
