// Package drive carries a load run's actions out: a Worker pulls each
// client's behave.Stream and executes its actions, open model, through a
// Driver (the server side: loadgen/sim in virtual time, loadgen/loopback
// over real sockets), and feeds what it sees to a record.Recorder and the
// run's series. It also holds the drivers' shared vocabulary: ConnID,
// Event, the clocks (RealTime, VirtualTime) and the transport names.
//
// A Worker carries the actions of its clients out through a Driver, open
// model: each action at its intended time, late ones at once (never
// skipped, never rescheduled; those still due when the run ends are
// counted HeldAtEnd, not carried out), sends never waiting for replies. Latency is
// measured from the intended time (Response: coordinated-omission free),
// beside the time from the actual write (Service) and the worker's own
// lateness (SendLag; record.Recorder.CheckSendLag says whether a run is valid).
package drive
