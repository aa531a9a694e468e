package decide

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
)

// idSource makes decision and event ids: a random per-process prefix and a counter, unique
// across instances without a syscall per id.
type idSource struct {
	prefix [16]byte
	n      atomic.Uint64
}

func newIDSource() *idSource {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	s := &idSource{}
	hex.Encode(s.prefix[:], raw[:])
	return s
}

// append appends a fresh id (16 hex digits, '-', base-36 counter) to dst.
func (s *idSource) append(dst []byte) []byte {
	dst = append(dst, s.prefix[:]...)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, s.n.Add(1), 36)
}

func (s *idSource) next() string { return string(s.append(make([]byte, 0, 32))) }

// idSourceOnce makes its idSource on first use, so a Decider needs no constructor.
type idSourceOnce struct {
	once sync.Once
	s    *idSource
}

func (o *idSourceOnce) get() *idSource {
	o.once.Do(func() { o.s = newIDSource() })
	return o.s
}
