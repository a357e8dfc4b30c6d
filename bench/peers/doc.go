// Package peers compares sluice's token bucket with other Go rate limiters.
//
// It is its own module (bench/peers/go.mod, with a replace directive pointing
// at the repository root) so that the peer libraries never enter the main
// module's requirements. Everything here is benchmarks and the tests that
// keep them honest; see bench/README.md for how to run them, what each name
// means and the numbers measured. cmd/ratios reads `go test -bench` output
// and prints the medians and the ratios the project tracks.
package peers
