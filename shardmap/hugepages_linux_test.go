//go:build linux

package shardmap

import (
	"bufio"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// A large map's first tables are advised onto 2 MiB pages: the mappings
// that hold the whole huge pages of its cells and of its marks carry the
// advice (VmFlags "hg" in /proc/self/smaps, which only MADV_HUGEPAGE
// sets, whatever the system's transparent_hugepage mode), and the tables
// still take keys. How many huge pages the kernel granted is logged, not
// asserted: it depends on the kernel's free huge pages and on whether the
// allocator reused memory already faulted.
func TestFirstTablesOnHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v): no huge page would be granted", strings.TrimSpace(string(mode)), err)
	}
	if thpDisabled {
		t.Skip("GODEBUG=disablethp=1: the map gives no advice, as asked")
	}
	m := newMap(t, 1e6, 10, Config{MaxKeys: 1 << 20, Shards: 16})
	cells := m.shards[0].tab.Load().cells
	marks := m.shards[0].tab.Load().marks
	n := uintptr(len(m.shards)) * uintptr(m.slots)
	for _, r := range []struct {
		name string
		p, n uintptr
	}{
		{"cells", uintptr(unsafe.Pointer(&cells[0])), n * unsafe.Sizeof(cell{})},
		{"marks", uintptr(unsafe.Pointer(&marks[0])), n * 8},
	} {
		beg, end := hugeSpan(r.p, r.n)
		for _, a := range []uintptr{beg, end - 1} {
			flags, huge := smapsAt(t, a)
			t.Logf("%s: the mapping at %#x has VmFlags %v, AnonHugePages %d KiB", r.name, a, flags, huge)
			if !slices.Contains(flags, "hg") {
				t.Fatalf("%s: the mapping at %#x is not advised onto huge pages (VmFlags %v)", r.name, a, flags)
			}
		}
	}
	for k := uint64(1); k <= 1000; k++ {
		if r, _ := m.TakeAt(k, 0, 1); !r.OK() {
			t.Fatalf("take of new key %d refused", k)
		}
	}
	if got := m.Len(); got != 1000 {
		t.Fatalf("Len %d after 1000 new keys", got)
	}
	runtime.KeepAlive(m)
}

// smapsAt returns the VmFlags and the AnonHugePages (KiB) of the mapping
// of this process that holds address a.
func smapsAt(t *testing.T, a uintptr) (flags []string, hugeKiB int64) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fs[0], "-"); ok && !strings.HasSuffix(fs[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(a) >= l && uint64(a) < h
				continue
			}
		}
		if !in {
			continue
		}
		switch fs[0] {
		case "AnonHugePages:":
			hugeKiB, _ = strconv.ParseInt(fs[1], 10, 64)
		case "VmFlags:":
			return fs[1:], hugeKiB
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping holds %#x", a)
	return nil, 0
}
