//go:build !race

package atomicbucket

// raceEnabled reports whether the tests run under the race detector, which
// slows atomic operations enough that the long runs shrink.
const raceEnabled = false
