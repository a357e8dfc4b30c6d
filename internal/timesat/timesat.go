// Package timesat is arithmetic on int64 times (nanoseconds on a caller's
// clock, any epoch, either sign) that saturates instead of wrapping, and an
// order-preserving map of such times onto uint64. Every int64 is a valid
// time for sluice's limiters, so a deadline far in the future must stay in
// the future, and a wait to it must stay positive. The functions are pure
// and small enough to inline on hot paths.
package timesat

import "math"

// Add returns now+d for d ≥ 0, saturating at math.MaxInt64: a very long
// window or lockout lasts to the end of time rather than wrapping into the
// past.
func Add(now, d int64) int64 {
	if now > math.MaxInt64-d {
		return math.MaxInt64
	}
	return now + d
}

// Sub returns t−now for t > now, saturating at math.MaxInt64 (a deadline
// more than MaxInt64 after a now below 0).
func Sub(t, now int64) int64 {
	// The difference as unsigned is exact for t > now; without a branch
	// Sub keeps its callers (shardmap's HeldAt) within the inliner's
	// budget.
	return int64(min(uint64(t)-uint64(now), math.MaxInt64))
}

// Offset returns t − MinInt64: every int64 as a uint64, in the same order.
// Its zero is the least time.
func Offset(t int64) uint64 { return uint64(t) ^ 1<<63 }
