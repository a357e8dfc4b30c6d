// Package record is what a load run measured: outcomes, the Recorder's
// histograms and counts, the time series of a run (Interval) and the view of
// the server's own counters. It knows nothing of drivers or behaviours'
// internals: a drive.Worker feeds it.
//
// A Recorder keeps, per population × kind, an HDR histogram of each metric
// and the count of every Outcome the client saw (the server's reason from
// a Reply or a Disconnect, or what only the client sees: Sent, NotSent,
// Timeout, Disconnected, Refused, Failed, Overflow, HeldAtEnd), and the server's
// decisions on every frame the population sent, by kind
// (Recorder.KindDecisions: exact in both drivers). A session the server
// refuses before reading its Hello (Gate.Open, by address) ends with a
// Disconnect while the Hello is unanswered, and the worker counts that
// reason as the server's decision on the Hello: the server cannot, not
// knowing the client's population yet.
// Workers record separately and are merged (Recorder.Merge), which checks
// and keeps the count of any value a merge drops.
//
// Raw bytes are recorded per write (its outcome and its bytes): the client
// cannot know how the server will delimit random bytes, a lying length or
// a frame dribbled over many writes. The server's decisions on the frames
// it reads from them, and on any frame that no other kind describes, are
// counted per frame under raw. Writes and frames do not divide: the
// results give a population that writes raw bytes (behave.WritesRaw: bad-length,
// malformed, slowloris) no drop rate.
package record
