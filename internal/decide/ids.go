package decide

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"popupsvc/internal/event"
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

// draw takes the next id.
func (s *idSource) draw() freshID { return freshID{prefix: s.prefix, n: s.n.Add(1)} }

func (s *idSource) next() string {
	id := s.draw()
	return string(id.append(make([]byte, 0, 32)))
}

// freshID is one id drawn from an idSource, as a value: what a plan needs to name a decision
// without touching the source.
type freshID struct {
	prefix [16]byte
	n      uint64
}

// append appends the id (16 hex digits, '-', base-36 counter) to dst.
func (f *freshID) append(dst []byte) []byte {
	dst = append(dst, f.prefix[:]...)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, f.n, 36)
}

// idSourceOnce makes its idSource on first use, so a Decider needs no constructor.
type idSourceOnce struct {
	once sync.Once
	s    *idSource
}

func (o *idSourceOnce) get() *idSource {
	o.once.Do(func() { o.s = newIDSource() })
	return o.s
}

// appendArm appends the suffix "~<popup id>.<arm index>" to a decision id.
func appendArm(b []byte, popupID int64, arm int) []byte {
	b = append(b, '~')
	b = strconv.AppendInt(b, popupID, 10)
	b = append(b, '.')
	return strconv.AppendInt(b, int64(arm), 10)
}

// maxDecisionIDLen bounds a decision id so that its exposures' ids (exposureID: ".x1" to ".x4"
// appended) fit event.MaxIDLen.
const maxDecisionIDLen = event.MaxIDLen - len(".x4")

// armSuffixes calls yield with each experiment suffix "~<popup id>.<arm index>" of a decision id,
// in order (the first names the decision's first experiment, each later one a control a
// fall-through passed on the way); it stops at the first that does not parse (a client's forgery
// is not an error) and after max of them.
func armSuffixes(decisionID string, max int, yield func(popupID int64, arm int)) {
	t := strings.IndexByte(decisionID, '~')
	for n := 0; t >= 0 && n < max; n++ {
		rest := decisionID[t+1:]
		end := strings.IndexByte(rest, '~')
		seg := rest
		if end >= 0 {
			seg = rest[:end]
		}
		dot := strings.IndexByte(seg, '.')
		if dot < 0 {
			return
		}
		id, err1 := strconv.ParseInt(seg[:dot], 10, 64)
		i, err2 := strconv.Atoi(seg[dot+1:])
		if err1 != nil || err2 != nil || id <= 0 || i < 0 {
			return
		}
		yield(id, i)
		if end < 0 {
			return
		}
		t += 1 + end
	}
}

// holdoutID is the event id of a decision's holdout event (docs/CONTRACT.md §15): the decision
// id and ".h" (it fits event.MaxIDLen as an exposure's does).
func holdoutID(decision string) string { return decision + ".h" }

// exposureID is the event id of the k-th (from 1) control exposure a decision records: the
// decision id and ".x<k>", so that every event in the queue has its own (uid, event_id).
func exposureID(decision string, k int) string {
	return decision + ".x" + strconv.Itoa(k)
}
