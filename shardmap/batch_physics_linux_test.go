//go:build linux

package shardmap

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
	"unsafe"
)

// hugeWords returns n words of anonymous memory outside the Go heap that
// the kernel has backed with 2 MiB pages (madvise(MADV_HUGEPAGE), then
// every page written), and whether it could: false where transparent huge
// pages are off or none could be had (AnonHugePages in smaps_rollup did
// not grow by the array's size).
func hugeWords(b *testing.B, n int) ([]uint64, bool) {
	const huge = 2 << 20
	size := n * 8
	mem, err := syscall.Mmap(-1, 0, size+huge, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		b.Logf("mmap: %v", err)
		return nil, false
	}
	b.Cleanup(func() { syscall.Munmap(mem) })
	off := (huge - int(uintptr(unsafe.Pointer(&mem[0])))%huge) % huge
	mem = mem[off : off+size]
	before := anonHuge()
	if err := syscall.Madvise(mem, 14); err != nil { // MADV_HUGEPAGE
		b.Logf("madvise: %v", err)
		return nil, false
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	got := anonHuge() - before
	b.Logf("2 MiB pages: AnonHugePages grew %d KiB for a %d KiB array", got>>10, size>>10)
	if got < int64(size) {
		return nil, false
	}
	clear(mem)
	return unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), n), true
}

// anonHuge returns the process's AnonHugePages in bytes, 0 if unknown.
func anonHuge() int64 {
	data, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "AnonHugePages:" {
			kb, _ := strconv.ParseInt(string(f[1]), 10, 64)
			return kb << 10
		}
	}
	return 0
}
