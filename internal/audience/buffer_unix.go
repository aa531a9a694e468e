//go:build unix

package audience

import (
	"syscall"
	"unsafe"
)

// mapFingerprints reserves an anonymous private mapping for max fingerprints, without
// committing memory for it (MAP_NORESERVE): only the pages written are ever resident.
func mapFingerprints(max int) ([]byte, []uint64, func([]byte) error, bool) {
	if max <= 0 {
		return nil, nil, nil, false
	}
	mem, err := syscall.Mmap(-1, 0, 8*max, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, nil, nil, false
	}
	fps := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), max)[:0]
	return mem, fps, syscall.Munmap, true
}
