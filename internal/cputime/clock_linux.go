//go:build linux

package cputime

import (
	"syscall"
	"unsafe"
)

// Clock ids of clock_gettime(2).
const (
	clockProcessCPU = 2 // CLOCK_PROCESS_CPUTIME_ID
	clockThreadCPU  = 3 // CLOCK_THREAD_CPUTIME_ID
)

// Thread returns the calling thread's CPU time in ns, or -1.
func Thread() int64 { return now(clockThreadCPU) }

// Process returns the process's CPU time (every thread's, user and
// system) in ns, or -1.
func Process() int64 { return now(clockProcessCPU) }

func now(clock int) int64 {
	var ts syscall.Timespec
	// clock_gettime writes the Timespec before returning; the pointer
	// conversion happens in the call expression, as unsafe.Pointer's rule
	// for syscall.Syscall requires.
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}
