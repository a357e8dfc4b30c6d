package bench

import (
	"runtime"
	"testing"
)

// cpuMeter measures the CPU time of a benchmark's timed region, reported
// as the metric cpu-ns/op beside ns/op. Wall time counts the time the
// process spends descheduled, which on a loaded machine swamps a take of a
// few nanoseconds; CPU time does not (see bench/README.md).
type cpuMeter struct {
	clock int // clockThreadCPU (the goroutine is pinned) or clockProcessCPU
	start int64
}

// serialCPU pins the benchmark's goroutine to its OS thread and counts
// that thread's CPU time. Call it right after b.ResetTimer, and stop at
// the end of the timed loop.
func serialCPU() cpuMeter {
	runtime.LockOSThread()
	return cpuMeter{clock: clockThreadCPU, start: cpuNow(clockThreadCPU)}
}

// parallelCPU counts the whole process's CPU time (for RunParallel: the
// CPU time of every goroutine per op, summed).
func parallelCPU() cpuMeter {
	return cpuMeter{clock: clockProcessCPU, start: cpuNow(clockProcessCPU)}
}

// stop reports cpu-ns/op for the b.N ops since the meter started.
func (m cpuMeter) stop(b *testing.B) {
	end := cpuNow(m.clock)
	if m.clock == clockThreadCPU {
		runtime.UnlockOSThread()
	}
	if m.start >= 0 && end >= m.start && b.N > 0 {
		b.ReportMetric(float64(end-m.start)/float64(b.N), "cpu-ns/op")
	}
}
