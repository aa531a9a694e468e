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

// SortUnique sorts the fingerprints and drops repeats, in place (SortUnique).
func (b *Buffer) SortUnique() {
	slices.Sort(b.fps)
	b.fps = slices.Compact(b.fps)
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
