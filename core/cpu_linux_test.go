//go:build linux

package core

import (
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID),
// or -1.
func threadCPU() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}

// cpuPerOp pins the benchmark's goroutine to its thread and returns a
// func that reports the thread's CPU time per op as cpu-ns/op: on a loaded
// machine wall time counts the time the thread waits for a core.
func cpuPerOp(b *testing.B) func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		end := threadCPU()
		runtime.UnlockOSThread()
		if start >= 0 && end >= start && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
