// Package bench holds sluice's hot-path benchmarks and the floors they are
// judged against, measured in one package so that every figure can be read
// as a ratio to a floor from the same run (see the sub-package gate, which
// compares such ratios, and ab, which runs two commits' benchmarks
// interleaved on one machine).
//
// The benchmarks (bench_test.go files only; this package has no API):
//
//	Floor/cas            one Load and one CompareAndSwap of an uncontended uint64
//	Floor/cas-shared     the same on one word shared by every goroutine (RunParallel)
//	Floor/clock          one read of atomicbucket.Nanotime (the monotonic clock)
//	Floor/map1k, map1M   one map[uint64]uint64 lookup among 1k / 1M keys
//	Bucket/pass|deny/serial|parallel   atomicbucket.Bucket.TakeAt
//	Bucket/pass/clock    atomicbucket.Bucket.Take (reads the clock)
//	Keyed/1k|1M/serial|parallel        core.Limiter.TakeAt on an existing key
//	Gate/accept|deny     core.Gate.Check of an authenticated session
//	Gate/accept-scraped  Gate/accept beside a goroutine scraping a metrics.GateCollector
//	Fleet/lease|local/take  fleet.Layer.TakeAt on a leased key, against core.Limiter.TakeAt
//	Wire/decode          loadgen/wire.Decoder over a 4 kB buffer of typical frames
//	Sim/run              one loadgen.RunSim of a mixed crowd of 59 clients, 10 s of virtual time
//
// With -short (the quick set that CI and `sluice bench ab` run by default)
// the benchmarks whose fixtures take long to build (1M keys) skip.
//
// Build tag sluice_slow20 injects a slowdown of about 20% into the Bucket
// benchmarks, in the benchmark harness only: after its timed loop each
// Bucket benchmark makes one extra take (on a twin bucket in the same
// state) for every five it measured, inside the timed region. No real code
// path changes. It exists to measure the gate's power (bench/README.md).
package bench
