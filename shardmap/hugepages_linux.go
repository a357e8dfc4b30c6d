//go:build linux

package shardmap

import (
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on x86-64 (and on
// arm64 with 4 KiB base pages; a 64 KiB-page kernel's are 512 MiB, and a
// slab then covers none, so the advice changes nothing there).
const hugePage = 2 << 20

// haveHugePageAdvice reports that adviseHugePages asks the kernel for
// huge pages: New cuts a large map's first tables from slabs only here.
const haveHugePageAdvice = true

// madvHugePage is MADV_HUGEPAGE (not in package syscall on every arch).
const madvHugePage = 14

// thpDisabled reports GODEBUG=disablethp=1, which asks the Go runtime to
// keep the heap off transparent huge pages: the map then respects it.
var thpDisabled = strings.Contains(","+os.Getenv("GODEBUG")+",", ",disablethp=1,")

// adviseHugePages asks the kernel to back the whole 2 MiB pages inside
// the n bytes at p with huge pages (madvise(MADV_HUGEPAGE)), so that a
// take on a large table pays fewer page walks. The memory stays the Go
// heap's; madvise only sets a flag on the range and reads none of it. The
// advice applies to pages faulted after it: memory the allocator reused
// (and cleared, so faulted already) keeps its 4 KiB pages until the
// kernel's background collapse, if it runs, merges them. The flag outlives
// the table: the range, once the heap reuses or returns it, stays
// eligible for huge pages, which can grow the process's resident memory
// by up to a huge page per range the runtime returns in part (the cost
// that made the Go runtime stop advising its heap). Where transparent
// huge pages are off the call fails, and changes nothing.
func adviseHugePages(p unsafe.Pointer, n uintptr) {
	beg := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + n) &^ (hugePage - 1)
	if end <= beg {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, beg, end-beg, madvHugePage)
}
