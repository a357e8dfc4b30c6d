//go:build linux

package bench

import (
	"syscall"
	"unsafe"
)

// Clock ids of clock_gettime(2).
const (
	clockProcessCPU = 2 // CLOCK_PROCESS_CPUTIME_ID
	clockThreadCPU  = 3 // CLOCK_THREAD_CPUTIME_ID
)

// cpuNow returns the CPU time consumed so far on clock, in ns, or -1.
func cpuNow(clock int) int64 {
	var ts syscall.Timespec
	// clock_gettime writes the Timespec before returning; the pointer
	// conversion happens in the call expression, as unsafe.Pointer's rule
	// for syscall.Syscall requires.
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}
