//go:build amd64 && gc && !race

package relstore

import (
	"sync/atomic"
	"unsafe"
)

// Store stores v in *p with release ordering (see the package doc).
func Store(p *atomic.Uint64, v uint64) {
	// atomic.Uint64's only sized field is its value, at offset 0.
	storeRelease((*uint64)(unsafe.Pointer(p)), v)
}

//go:noescape
func storeRelease(p *uint64, v uint64)

// atomic.Uint64 is its value alone: 8 bytes, so the value is at offset 0.
var _ [unsafe.Sizeof(atomic.Uint64{}) - 8]struct{}
var _ [8 - unsafe.Sizeof(atomic.Uint64{})]struct{}
