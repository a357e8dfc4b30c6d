package shardmap

import (
	"testing"
	"unsafe"
)

// TestPrefetchWriteChangesNothing holds prefetchWrite to a hint: on words
// anywhere in a table's cells (first and last included) and on none, it
// returns and leaves every word as it was; an address past the cells and
// address 0 do not fault.
func TestPrefetchWriteChangesNothing(t *testing.T) {
	cells := make([]cell, 4096)
	for i := range cells {
		cells[i].key.Store(uint64(i) + 1)
		cells[i].word.Store(^uint64(i))
	}
	var ps []uintptr
	for i := 0; i < len(cells); i += 37 {
		ps = append(ps, uintptr(unsafe.Pointer(&cells[i])), uintptr(unsafe.Pointer(&cells[i].word)))
	}
	ps = append(ps, uintptr(unsafe.Pointer(&cells[len(cells)-1].word)), uintptr(unsafe.Pointer(&cells[len(cells)-1]))+64, 0)
	prefetchWrite(ps)
	prefetchWrite(nil)
	for i := range cells {
		if k, w := cells[i].key.Load(), cells[i].word.Load(); k != uint64(i)+1 || w != ^uint64(i) {
			t.Fatalf("cell %d: key %d word %#x after prefetchWrite", i, k, w)
		}
	}
}
