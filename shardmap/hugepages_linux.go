//go:build linux

package shardmap

import (
	"os"
	"strings"
	"syscall"
	"unsafe"
)

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
// that made the Go runtime stop advising its heap). A kernel built without
// transparent huge pages refuses the call (EINVAL); one whose mode is
// "never" takes the flag and grants nothing. Either way nothing changes.
func adviseHugePages(p unsafe.Pointer, n uintptr) {
	beg, end := hugeSpan(uintptr(p), n)
	if end <= beg {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, beg, end-beg, madvHugePage)
}
