// Package loadgen is sluice's load harness: seeded clients (honest players,
// laggy ones, and hostile floods) that run against the reference game
// server, either in virtual time straight into a core.Gate (sim) or over
// real loopback sockets (loopback), and record what happened.
//
// # Where everything lives
//
// The harness is layered, each package importing only those above it in
// this list (and loadgen/server, loadgen/wire, loadgen/proto, core, trace):
//
//   - loadgen/behave: plans (Plan, Population, Client), the behaviours
//     and the actions and streams they produce, the kinds sent on the wire.
//   - loadgen/record: outcomes, the Recorder, the series (Interval), the
//     view of the server's counters.
//   - loadgen/drive: the Driver interface and its events and clocks, and the
//     Worker that carries clients' actions out through any Driver.
//   - loadgen/sim and loadgen/loopback: the two drivers, in virtual time and
//     over real sockets.
//   - loadgen (this package): RunSpec, RunSim and RunLoopback, which wire a
//     plan, workers, a driver and a recorder into one run, and its Result.
//
// Each package's doc gives its part of the model.
//
// # Runs
//
// RunSim and RunLoopback run a RunSpec (plan, warm-up, series interval,
// bounds) against a policy and return a Result: the measured window's
// record.Recorder, a time series per population (record.Interval; its response
// histograms packed, so a long series stays small), the clients the
// server cut off and when, the server's frame count and time. Every run is
// bounded in time (the plan's Duration, then at most drive.RunConfig.Timeout for
// the last replies) and in count (drive.RunConfig.MaxActions), stops by itself,
// and sends traffic to loopback addresses only. A cancelled run returns
// promptly with what it measured (Result.Complete false).
package loadgen
