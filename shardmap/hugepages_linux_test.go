//go:build linux

package shardmap

import (
	"os"
	"strings"
	"testing"
	"unsafe"
)

// A large map's first tables are on 2 MiB pages where the kernel grants
// them to madvise (transparent_hugepage "madvise" or "always"): New
// faults them in, so the process's AnonHugePages grows by about the
// tables' size, and the tables still take keys.
func TestFirstTablesOnHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v): nothing to grant", strings.TrimSpace(string(mode)), err)
	}
	before := anonHuge()
	m := newMap(t, 1e6, 10, Config{MaxKeys: 1 << 20, Shards: 16})
	got := anonHuge() - before
	size := int64(len(m.shards)) * int64(m.slots) * int64(unsafe.Sizeof(cell{})+8)
	t.Logf("AnonHugePages grew %d KiB for %d KiB of cells and marks", got>>10, size>>10)
	// Each slab loses at most a partial 2 MiB page at either end; half
	// the rest is the bound, so that a kernel short of free huge pages
	// for a few of them does not fail the test, while a map that is not
	// advised (no growth at all) does.
	if got < (size-4*hugePage)/2 {
		t.Fatalf("AnonHugePages grew %d KiB: the first tables (%d KiB) are not on huge pages", got>>10, size>>10)
	}
	for k := uint64(1); k <= 1000; k++ {
		if r, _ := m.TakeAt(k, 0, 1); !r.OK() {
			t.Fatalf("take of new key %d refused", k)
		}
	}
	if n := m.Len(); n != 1000 {
		t.Fatalf("Len %d after 1000 new keys", n)
	}
}
