// Package cputime reads CPU time for benchmarks that report cpu-ns/op
// beside ns/op: wall time counts the time a benchmark spends descheduled,
// which on a loaded machine swamps a take of a few nanoseconds; CPU time
// does not (though it still counts what a sibling hyperthread takes). On
// Linux it reads clock_gettime's thread and process CPU clocks; elsewhere
// every reading is -1 and no metric is reported. A Meter belongs to the
// goroutine that started it; the readings are safe from any goroutine.
package cputime

import (
	"runtime"
	"testing"
)

// Meter measures the CPU time of a benchmark's timed region and reports
// it per op. The zero value reports nothing.
type Meter struct {
	thread bool // Serial: the starting goroutine's thread, which it pins
	start  int64
	valid  bool
}

// Serial pins the calling goroutine to its OS thread and counts that
// thread's CPU time: for a serial benchmark. Call it right after
// b.ResetTimer and Stop at the end of the timed loop, on the same
// goroutine.
func Serial() Meter {
	runtime.LockOSThread()
	return Meter{thread: true, start: Thread(), valid: true}
}

// Parallel counts the whole process's CPU time: for RunParallel, the CPU
// time of every goroutine per op, summed.
func Parallel() Meter { return Meter{start: Process(), valid: true} }

// Stop reports cpu-ns/op for the b.N ops since the meter started (and
// unpins a Serial meter's goroutine).
func (m Meter) Stop(b *testing.B) {
	if !m.valid {
		return
	}
	var end int64
	if m.thread {
		end = Thread()
		runtime.UnlockOSThread()
	} else {
		end = Process()
	}
	if m.start >= 0 && end >= m.start && b.N > 0 {
		b.ReportMetric(float64(end-m.start)/float64(b.N), "cpu-ns/op")
	}
}
