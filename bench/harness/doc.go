// Package harness benchmarks the load harness itself (loadgen's drivers
// and the reference server) against the harness targets:
//
//   - the loopback driver sustains at least 100k frames/s of a mixed
//     population with send-lag p99 ≤ 2 ms (BenchmarkLoopback, the server
//     in the benchmark's process; BenchmarkLoopbackSplit, the server in a
//     child process at the lowest CPU priority);
//   - the sim driver processes at least 2M frames/s (BenchmarkSim);
//   - under the hostile flood mix, honest request p99 is at most 2× the
//     honest p99 of the same population without the flood
//     (BenchmarkFloodImpact);
//   - the server's CPU time per frame with the gate on is within 1.15× of
//     the same run with limiting off (BenchmarkServerCPU).
//
// Every figure is reported as a custom metric, and every comparison as a
// ratio of two figures measured in the same benchmark iteration, so a
// slower or busier machine moves both sides. One iteration is one or two
// whole runs of a few seconds: run them with -benchtime 1x (see
// bench/README.md, "Harness benchmarks"). The package has no API; the
// benchmarks are in harness_test.go.
package harness
