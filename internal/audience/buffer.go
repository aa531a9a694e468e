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
// nil, is called between pieces of the work with the fingerprints each piece covered, about a
// million at most: a sort of 20 million takes seconds of one core, and the process it shares with
// the public API may rest there. An error from pause ends the sort, unfinished.
func (b *Buffer) SortUnique(pause func(n int) error) error {
	if err := sortPaced(b.fps, pause); err != nil {
		return err
	}
	b.fps = slices.Compact(b.fps)
	return nil
}

// sortPiece is about the most fingerprints sortPaced handles between two pauses.
const sortPiece = 1 << 20

// sortPaced sorts fps in place, pausing between pieces (SortUnique): an in-place distribution
// of the fingerprints by their top byte (American flag sort), paused every sortPiece moves, then
// each of the 256 runs sorted on its own, paused between runs. Fingerprints are uniform, so the
// runs are of about len(fps)/256 each; any spread sorts right, only the pauses grow apart.
func sortPaced(fps []uint64, pause func(n int) error) error {
	if pause == nil || len(fps) <= sortPiece {
		slices.Sort(fps)
		return nil
	}
	var count [257]int
	for _, fp := range fps {
		count[fp>>56+1]++
	}
	var start, next [256]int
	for d := range 256 {
		count[d+1] += count[d]
		start[d], next[d] = count[d], count[d]
	}
	moved := 0
	for d := range 256 {
		end := count[d+1]
		for next[d] < end {
			// Carry the fingerprint at next[d] to its own run, and the one found there to its own,
			// until one belongs here.
			v := fps[next[d]]
			for t := int(v >> 56); t != d; t = int(v >> 56) {
				fps[next[t]], v = v, fps[next[t]]
				next[t]++
				moved++
			}
			fps[next[d]] = v
			next[d]++
			if moved++; moved >= sortPiece {
				if err := pause(moved); err != nil {
					return err
				}
				moved = 0
			}
		}
	}
	piece := 0
	for d := range 256 {
		run := fps[start[d]:count[d+1]]
		slices.Sort(run)
		if piece += len(run); piece >= sortPiece || d == 255 {
			if err := pause(piece); err != nil {
				return err
			}
			piece = 0
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
