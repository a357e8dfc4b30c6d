//go:build !race

package metrics

// raceEnabled reports whether the tests run under the race detector, which
// slows the 100,000-session cardinality test past a minute.
const raceEnabled = false
