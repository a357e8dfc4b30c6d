// Package loopback is the driver that runs a load over real sockets, to
// the reference server started in-process on 127.0.0.1 or to a server
// already running elsewhere.
//
// The loopback driver (Loopback, loadgen.RunLoopback) starts a loadgen/server in-process on
// 127.0.0.1 (a free port) with the policy and tick rate, and runs the plan
// on loadgen.RunSpec.Workers workers (default GOMAXPROCS) over real TCP (or WebSocket
// or UDP: each client its population's transport, the in-process server
// listening on every one some population speaks): each connection
// dials from its address group's own 127.x.y.z (LoopbackAddr; all of
// 127.0.0.0/8 loops back on Linux), so the server's pre-auth limits see
// distinct hosts; one goroutine per connection reads the server's frames
// and stamps them with the run's clock (drive.RealTime) as they arrive. A worker
// sleeps until its next intended send on a timerfd (on Linux) beside Go's
// timer, which alone fires up to a millisecond late when the process is
// idle (drive.RealTime.Poll). The server's decisions come from its per-population
// counters (which count a client's frames before its Hello under no
// population), read at each interval's end. Every goroutine the run starts
// has ended, and the server is stopped, when it returns. loadgen.Result.ServerCPU
// is the server's own service time (server.Stats ReadService +
// TickService). With loadgen.RunSpec.Remote it starts no server and drives one
// already running elsewhere (another process, for instance `sluice serve`
// or a benchmark's child at a lower CPU priority than the load generator),
// reading its counters through loadgen.Remote.Stats.
package loopback
