//go:build linux

package shardmap

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of an x86-64 or arm64 transparent huge page.
const hugePage = 2 << 20

// madvHugePage is MADV_HUGEPAGE (not in package syscall on every arch).
const madvHugePage = 14

// adviseHugePages asks the kernel to back the whole 2 MiB pages inside
// the n bytes at p with huge pages (madvise(MADV_HUGEPAGE)), so that a
// take on a large table pays fewer page walks. The memory stays the Go
// heap's: the advice is a flag on the mapping, which the garbage
// collector neither sees nor needs to undo when the table dies. Where
// transparent huge pages are off the call fails, and changes nothing.
// p must not have been written yet: the advice applies to pages faulted
// after it.
func adviseHugePages(p unsafe.Pointer, n uintptr) {
	beg := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + n) &^ (hugePage - 1)
	if end <= beg {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, beg, end-beg, madvHugePage)
}
