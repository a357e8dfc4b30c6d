//go:build linux

package peers

import (
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU returns the calling thread's CPU time in ns, or -1.
func threadCPU() int64 {
	var ts syscall.Timespec
	// clock_gettime writes the Timespec before returning; the pointer
	// conversion happens in the call expression, as unsafe.Pointer's rule
	// for syscall.Syscall requires.
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}

// cpuTimer reports the CPU time of a serial benchmark's timed loop per op
// as cpu-ns/op, the goroutine locked to its thread meanwhile. On a loaded
// machine wall time counts the time the benchmark was descheduled; CPU
// time does not (but still counts what a sibling hyperthread takes).
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

// processCPU returns the CPU time (user and system) of the whole process
// so far in ns, or -1.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
