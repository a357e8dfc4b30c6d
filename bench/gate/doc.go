// Package gate decides whether a set of benchmark results regressed
// against a base set, without crying wolf on a noisy machine: it fails only
// on changes that are statistically significant (Mann-Whitney U on
// medians, golang.org/x/perf/benchmath), in the bad direction, and larger
// than a minimum effect size, each configurable per benchmark; it refuses
// to decide on too few samples (an error, never a pass); and it compares
// time as a ratio to a floor measured in the same run, so a slower machine
// is not a regression.
//
// It reads `go test -bench` output with golang.org/x/perf/benchfmt. The
// CLI (`sluice gate BASE CAND`) wires it like this:
//
//	cfg := gate.DefaultConfig()          // or gate.LoadConfig(path) for --config
//	cfg.Alpha = 0.05                     // --alpha
//	cfg.MinEffect, err = gate.ParseFraction("5%") // --min-effect
//	rep, err := gate.CompareFiles(baseFiles, candFiles, cfg)
//	// (= gate.ReadFiles each side, then gate.Compare(base, cand, cfg))
//	// err wrapping gate.ErrTooFewSamples: rep is still set; print it, exit 1
//	rep.WriteText(os.Stdout)             // or rep.WriteJSON(os.Stdout) for --json
//	if rep.Regressed() { exit 3 }
//
// Measurements that are not Go benchmarks (a scenario's metrics over
// repeated runs) are gated the same way: build the sides with
// Set.AddValues and Set.SetBetter, or from results files with
// ScenarioSet.
package gate
