package decide

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
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

// nextInExperiment is a fresh decision id for a decision that popup id's experiment took part in
// with arm (docs/CONTRACT.md §10): the id, '~', the popup id, '.', the arm index.
func (s *idSource) nextInExperiment(popupID int64, arm int) string {
	b := s.append(make([]byte, 0, 48))
	b = append(b, '~')
	b = strconv.AppendInt(b, popupID, 10)
	b = append(b, '.')
	return string(strconv.AppendInt(b, int64(arm), 10))
}

// armSuffix reads the experiment suffix "~<popup id>.<arm index>" of a decision id; ok is false
// for an id without one, or with one that does not parse (a client's forgery is not an error).
func armSuffix(decisionID string) (popupID int64, arm int, ok bool) {
	t := strings.LastIndexByte(decisionID, '~')
	if t < 0 {
		return 0, 0, false
	}
	rest := decisionID[t+1:]
	dot := strings.IndexByte(rest, '.')
	if dot < 0 {
		return 0, 0, false
	}
	id, err1 := strconv.ParseInt(rest[:dot], 10, 64)
	i, err2 := strconv.Atoi(rest[dot+1:])
	if err1 != nil || err2 != nil || id <= 0 || i < 0 {
		return 0, 0, false
	}
	return id, i, true
}

// exposureID is the event id of the k-th (from 1) control exposure a decision records: the
// decision id and ".x<k>", so that every event in the queue has its own (uid, event_id).
func exposureID(decision string, k int) string {
	return decision + ".x" + strconv.Itoa(k)
}
