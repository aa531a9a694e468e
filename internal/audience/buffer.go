package audience

import "slices"

// Buffer is a growable list of fingerprints outside the Go heap: an anonymous memory mapping
// reserved, at its creation, for the most entries it may hold, whose pages the kernel provides
// only as they are first written. A member upload's fingerprints (up to 20 million: 160 MB) so
// never take part in the collector's pacing (with GOGC at 400 a heap that holds them may grow to
// five times their size before a collection), they are never copied to grow, and they leave the
// process when Free unmaps them, not when a collection finds them. Where no mapping can be had,
// it is an ordinary slice.
//
// The slice Fingerprints returns is valid until Free: nothing may keep it past that.
type Buffer struct {
	mem  []byte // the mapping (nil: none, fps is on the heap)
	fps  []uint64
	unmp func([]byte) error
}

// NewBuffer returns an empty buffer with room for max fingerprints (more spill to the heap).
func NewBuffer(max int) *Buffer {
	b := &Buffer{}
	if mem, fps, unmap, ok := mapFingerprints(max); ok {
		b.mem, b.fps, b.unmp = mem, fps, unmap
	}
	return b
}

// Append adds fp.
func (b *Buffer) Append(fp uint64) {
	if b.mem != nil && len(b.fps) == cap(b.fps) {
		// Past the room reserved: carry on on the heap.
		heap := make([]uint64, len(b.fps), 2*len(b.fps)+1)
		copy(heap, b.fps)
		b.release()
		b.fps = heap
	}
	b.fps = append(b.fps, fp)
}

// Len is the number of fingerprints held.
func (b *Buffer) Len() int { return len(b.fps) }

// SortUnique sorts the fingerprints and drops repeats, in place (SortUnique). pause, when not
// nil, is called between pieces of the work with the work each piece did (fingerprints moved or
// sorted, about sortPiece): a sort of 20 million takes seconds of one core, and the process it
// shares with the public API may rest there. An error from pause ends the sort, unfinished.
func (b *Buffer) SortUnique(pause func(n int) error) error {
	if err := sortPaced(b.fps, pause); err != nil {
		return err
	}
	fps, err := compactPaced(b.fps, pause)
	b.fps = fps
	return err
}

// compactPaced drops repeats from sorted fps as slices.Compact does, pausing (when pause is not
// nil) every 8 sortPiece fingerprints read, a piece of sequential work.
func compactPaced(fps []uint64, pause func(n int) error) ([]uint64, error) {
	if pause == nil || len(fps) == 0 {
		return slices.Compact(fps), nil
	}
	k := 1
	for i := 1; i < len(fps); i++ {
		if fps[i] != fps[k-1] {
			fps[k] = fps[i]
			k++
		}
		if i%(8*sortPiece) == 0 {
			if err := pause(sortPiece); err != nil {
				return fps[:k], err
			}
		}
	}
	return fps[:k], nil
}

// sortPiece is about the most work sortPaced does between two pauses: fingerprints moved or
// sorted, a millisecond or two of one core. The process it shares with the public API may have
// one core: whatever runs longer than a piece delays the requests queued behind it.
const sortPiece = 1 << 14

// sortRun is the longest run of fingerprints sortPaced sorts whole (about 0.2 ms); a longer one
// is distributed again by its next byte.
const sortRun = 1 << 12

// sortPaced sorts fps in place, pausing between pieces (SortUnique): a most-significant-byte
// radix sort, each pass an in-place distribution of the fingerprints by one byte (American flag
// sort) into 256 runs, each run distributed again by the next byte until it is at most sortRun
// long, then sorted whole. Fingerprints are uniform, so a 20-million list is distributed twice;
// any spread sorts right, only the pauses grow apart.
func sortPaced(fps []uint64, pause func(n int) error) error {
	if pause == nil || len(fps) <= sortPiece {
		slices.Sort(fps)
		return nil
	}
	s := pacedSort{pause: pause}
	if err := s.sort(fps, 56); err != nil {
		return err
	}
	return s.pause(s.work)
}

// pacedSort is the state of one sortPaced: the work done since the last pause.
type pacedSort struct {
	pause func(n int) error
	work  int
}

// did counts n of work and pauses once a piece is done.
func (s *pacedSort) did(n int) error {
	if s.work += n; s.work < sortPiece {
		return nil
	}
	n, s.work = s.work, 0
	return s.pause(n)
}

// sort sorts fps, whose fingerprints agree on the bits above shift+8, by the byte at shift and
// then each run of that byte (a shift below 0: they are all equal).
func (s *pacedSort) sort(fps []uint64, shift int) error {
	if shift < 0 {
		return s.did(len(fps))
	}
	if len(fps) <= sortRun {
		slices.Sort(fps)
		return s.did(len(fps))
	}
	var count [257]int
	for i := 0; i < len(fps); i += 8 * sortPiece {
		// A count is a sequential read, about an eighth of a move.
		chunk := fps[i:min(len(fps), i+8*sortPiece)]
		for _, fp := range chunk {
			count[fp>>shift&0xff+1]++
		}
		if err := s.did(len(chunk) / 8); err != nil {
			return err
		}
	}
	var start, next [256]int
	for d := range 256 {
		count[d+1] += count[d]
		start[d], next[d] = count[d], count[d]
	}
	for d := range 256 {
		end := count[d+1]
		for next[d] < end {
			// Carry the fingerprint at next[d] to its own run, and the one found there to its own,
			// until one belongs here.
			v, moved := fps[next[d]], 1
			for t := int(v >> shift & 0xff); t != d; t = int(v >> shift & 0xff) {
				fps[next[t]], v = v, fps[next[t]]
				next[t]++
				moved++
			}
			fps[next[d]] = v
			next[d]++
			if err := s.did(moved); err != nil {
				return err
			}
		}
	}
	for d := range 256 {
		if err := s.sort(fps[start[d]:count[d+1]], shift-8); err != nil {
			return err
		}
	}
	return nil
}

// Fingerprints returns the fingerprints held, valid until Free.
func (b *Buffer) Fingerprints() []uint64 { return b.fps }

// Free returns the buffer's memory to the system at once (a heap buffer: to the collector). The
// buffer is empty afterwards; Free may be called again.
func (b *Buffer) Free() {
	b.release()
	b.fps = nil
}

func (b *Buffer) release() {
	if b.mem != nil {
		_ = b.unmp(b.mem) // only fails for a range that is not a mapping
		b.mem = nil
	}
}
