//go:build sluice_slow20

package bench

// extraTakes returns how many extra takes a Bucket benchmark makes after n
// measured ones: one per five, about 20% more work per op. Only this build
// tag turns it on; it lives in the benchmark harness, never in real code.
func extraTakes(n int) int { return n / 5 }
