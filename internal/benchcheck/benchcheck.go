// Package benchcheck holds what the keyed benchmarks share to make sure
// they time passes: one clock for the goroutines of a parallel run, and the
// checks that the takes passed. A benchmark of passes that times denials
// measures another path, and nothing in its ns/op says so.
//
// A Clock is a plain value, safe to share between goroutines; the checks
// are called from the benchmark's own goroutine once its loop is done.
package benchcheck

import (
	"testing"

	"github.com/sluicedev/sluice/atomicbucket"
)

// Clock is the wall clock moved onto a fixture's clock, for every goroutine
// of a parallel benchmark. Goroutines that each advanced a counter of their
// own would drift apart, and one behind the others would find the buckets
// they took ahead of its clock: denials (and, with escalation, lockouts)
// instead of passes. A goroutine reads it once per batch of takes, as a
// server reads its clock.
type Clock struct{ offset int64 }

// ClockFrom returns a Clock that reads now at this moment and advances with
// the wall clock.
func ClockFrom(now int64) Clock { return Clock{now - atomicbucket.Nanotime()} }

// Now reads the clock.
func (c Clock) Now() int64 { return atomicbucket.Nanotime() + c.offset }

// AllPassed fails b unless every one of n serial takes passed (ok of them).
func AllPassed(b testing.TB, ok, n int) {
	b.Helper()
	if ok != n {
		b.Fatalf("%d of %d takes passed, want all", ok, n)
	}
}

// NearlyAllPassed fails b unless nearly all of n parallel takes passed
// (passed of them): all but 1% and 2 more, and it logs any that failed. Not every one need pass: a
// goroutine the OS stops between two readings of a Clock takes with a
// stale one, and keys the others took meanwhile refuse it.
func NearlyAllPassed(b testing.TB, passed, n int64) {
	b.Helper()
	switch failed := n - passed; {
	case failed > n/100+2:
		b.Fatalf("%d of %d takes failed, want nearly all to pass", failed, n)
	case failed > 0:
		b.Logf("%d of %d takes failed (stale clock readings under preemption)", failed, n)
	}
}
