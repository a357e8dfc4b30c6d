// Package sim is the driver that simulates the reference server
// (loadgen/server) in virtual time, straight into a core.Gate.
//
// The sim (Sim, loadgen.RunSim) simulates loadgen/server in virtual time, in-process,
// without sockets, sleeping or goroutines, on one worker: the same seed
// gives byte-identical results (loadgen.Result.Canonical). Each client's address
// group has a synthetic source address 10.x.y.z that only keys the gate's
// pre-auth tables. Dial opens a gate session (a refusal is a Disconnect
// with its reason); Hello authenticates; each write is read as the server
// reads its socket (Gate.Read per read of at most the byte budget's burst,
// then every whole frame decoded with wire and checked with FlagCharged;
// an oversize or lying length prefix is Oversize and disconnects; a frame
// that does not decode, or on a channel of the wrong class, is
// FlagMalformed); refusals are dropped, rejected with a Reply, or
// disconnect, as the verdict says. The Hello and pings are answered at once
// (a refused Hello too, before the Disconnect); an accepted request is
// answered (StatusOK, or StatusFailed for one sent before the Hello) and
// Done in the gate at the next tick, as the reference server answers its
// queued requests (a wait of up to one tick, 33.3 ms at the default
// loadgen.RunSpec.TickRate of 30 Hz); every tick runs Gate.Step and the server's
// idle (30s), partial-frame (5s) and Hello (10s) timeouts. Network latency
// is zero, so response times are service times plus any held time (a freeze,
// a login); a SimConfig.Stalls interval stops the simulated server, to show
// how a server-side stall reaches every response measured from its intended
// time. loadgen.Result.ServerCPU is the wall time spent simulating the server.
// Sim's doc lists where the sim differs from the real server.
package sim
