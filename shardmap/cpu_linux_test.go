//go:build linux

package shardmap

import (
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU returns the calling thread's CPU time in ns, or -1.
func threadCPU() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}

// cpuTimer reports a serial benchmark's thread CPU time per op as
// cpu-ns/op: on a loaded machine wall time counts the time the benchmark
// was descheduled, which swamps the differences between parts.
type cpuTimer struct{ start int64 }

func startCPU() cpuTimer {
	runtime.LockOSThread()
	return cpuTimer{threadCPU()}
}

func (c cpuTimer) stop(b *testing.B) {
	end := threadCPU()
	runtime.UnlockOSThread()
	if c.start >= 0 && end >= 0 && b.N > 0 {
		b.ReportMetric(float64(end-c.start)/float64(b.N), "cpu-ns/op")
	}
}
