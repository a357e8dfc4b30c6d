//go:build !sluice_slow20

package bench

// extraTakes returns how many extra takes a Bucket benchmark makes after n
// measured ones: none in this build (see the sluice_slow20 build tag).
func extraTakes(n int) int { return 0 }
