// Package server is sluice's reference game server: a TCP server on a
// loopback address that speaks the loadgen/wire protocol and puts every
// read and every frame through a core.Gate. The load harness runs it
// in-process against its clients; `sluice serve` runs it standalone (Run).
// It also serves the same protocol over WebSocket (WSConfig, ws.go) and
// over UDP (UDPConfig, udp.go: one frame per datagram, sessions keyed by
// connection id and source address after a stateless cookie handshake
// that never answers an unverified source with more bytes than it sent).
//
// # Model
//
// New builds the server and its gate from a Config; Start listens (port 0
// picks a free port, see Addr) and starts the accept loop and the tick
// loop. A listen address that is not loopback is refused (ErrNonLoopback)
// unless Config.AllowNonLoopback says otherwise.
//
// Each accepted connection is refused at once (accepted and closed,
// counted in ConnStats.Refused) while MaxConns are open. Otherwise the
// gate opens a session for its source address (Gate.Open: the pre-auth
// address bucket, lockouts, the session table; clients may bind distinct
// 127.x.y.z source addresses to look like distinct hosts), and refusal
// there sends a Disconnect frame with the reason and closes. Then, for each
// read from the socket:
//
//  1. Gate.Read charges the whole read to the byte budget (a read is never
//     larger than the budget's burst: the server reads at most that much at
//     a time). If it is refused, every frame the read completed is decoded
//     (to stay in sync) and dropped with its reason.
//  2. Every whole frame is decoded by a wire.Framer whose buffer is fixed
//     at accept, and checked with Gate.Check(FlagCharged), with Kind = the
//     frame's channel byte (an index into Policy.Channels); what follows
//     depends on its type, below.
//  3. A Disconnect verdict sends a Disconnect frame with the reason, then
//     closes the connection.
//
// By frame type:
//
//   - Input, on an input or predicted channel: accepted inputs are queued
//     for the next tick.
//   - Request, on a request channel: accepted requests are queued, and
//     answered on the tick (StatusOK, or StatusFailed when the connection
//     has not said Hello: passing the gate is not permission). A Reject
//     verdict is answered at once with StatusRejected, the reason byte and
//     the retry-after; a Drop (Duplicate, Replay, transport limits) gets no
//     reply.
//   - Hello: the first one authenticates the session (Gate.Authenticate)
//     with the account its token names (Tokens: one account per distinct
//     token) and sets the connection's population label; it is answered
//     with a Reply of id 0. A Hello of another version, a second Hello, a
//     client-sent Reply, Disconnect or Pong, an Input on a request channel
//     or a Request on an input channel, and any frame that does not decode
//     are checked as malformed (FlagMalformed), so they earn strikes; a
//     first Hello of another version, with an empty token or whose lengths
//     do not add up is answered Rejected Malformed and ends the connection
//     at once (reason Malformed), whatever the verdict, and one refused
//     by the gate (Lockout, ConnLimit, TableFull) or naming a new long
//     token past Config.MaxTokens (TableFull) is answered with its reason
//     and ends it too.
//   - End of stream: a client that half-closes its connection
//     (shutdown(SHUT_WR)) while requests it sent are queued gets their
//     answers, within Config.DrainTimeout, and then the close.
//   - Ping: checked on the channel named Config.PingChannel when the
//     policy has one, else limited by a bucket of the server's own
//     (Config.PingRate); answered at once with a Pong.
//   - A length prefix larger than the maximum frame is checked (reason
//     Oversize), and then the connection is disconnected with reason
//     Oversize whatever the verdict: the stream cannot be resynchronised.
//
// The tick loop runs at Config.TickRate (default 30 Hz). Each tick takes
// the commands queued before it started from one bounded queue shared by
// all connections (Config.QueueSize; a message that finds it full is
// refused with reason QueueFull, and a request is answered so): inputs are
// counted as applied; each request is answered and then Gate.Done is
// called. Then Gate.Step. The handler is deliberately trivial (count and
// answer): the server exists to exercise the gate.
//
// Time is only ever the server's monotonic clock (atomicbucket.Nanotime):
// every gate call gets it, nothing from a client is taken as time (a
// Ping's timestamp is only echoed). Socket deadlines are computed from it
// too.
//
// # Timeouts and slow clients
//
// A connection that completes no frame for IdleTimeout (default 30s,
// including one that never says Hello; the deadline is moved lazily, so
// the close comes up to IdleTimeout/8 later, never earlier), that holds a
// partial frame for FrameTimeout since its first bytes (default 5s:
// slowloris, lying length prefixes; at most FrameTimeout/8 late, never
// early), or that has not said Hello HelloTimeout after it was accepted
// (default 10s, so that connections that never authenticate cannot hold
// the server's slots by pinging), is sent a Disconnect with reason 0 and
// closed (cause "Timeout": core has no timeout reason). Replies and pongs go to a
// per-connection outbound buffer of at most WriteBuffer bytes (default
// 8192) that the connection's writer goroutine flushes (a read's own
// replies and pongs are added together once the read is counted); frames
// that would not fit disconnect the connection with reason QueueFull (or
// with the cause of the read that made them, when that read was ending the
// connection already, for an oversize frame say: a connection's cause is
// the first that ended it), so a client that does not read cannot make
// the server buffer without limit, and a write that does not complete
// within WriteTimeout (default 5s; up to half as long again, as the write
// deadline too is moved lazily) closes it.
//
// # Memory per connection
//
// One connection holds at most, in bytes:
//
//	ReadBuffer                       the framer buffer, fixed at accept:
//	                                 default 2 × max frame = 8,192
//	+ 2 × (WriteBuffer + 6)          the outbound buffer and the writer's
//	                                 spare, allocated small and doubled as
//	                                 needed: default 2 × 8,198 = 16,396
//	+ WriteBuffer                    the frames one read stages, allocated
//	                                 small and doubled: default 8,192
//	+ ConnOverhead (20,480)          two goroutine stacks, the net.Conn,
//	                                 the conn record, the gate session
//	= 53,260 with the defaults       (Server.ConnMemoryBound)
//
// plus the kernel's socket buffers, which are not Go memory. A connection
// that gets few replies holds about 15 KiB of heap and 6 KiB of stacks
// (the heap test: 2000 hostile connections, both ends of each socket
// counted; 14,945 and 6,160 bytes in one run). Shared by
// all connections: the tick queue (QueueSize × 24 bytes, default 384 KiB),
// the gate's tables (sized by the policy) and each population's counters
// (about (channels + 5) × 296 bytes per stripe with its padding; see
// Stats).
//
// # Concurrency
//
// Goroutines: one accept loop, one tick loop, and two per connection (the
// reader, which makes every gate call for its frames, and the writer).
// Senders (the reader and the tick) append to the outbound buffer under a
// per-connection mutex and never wait on the socket. Shutdown closes the
// listener, runs a last tick, sends every connection a Disconnect with
// reason Closed, waits for the writers to flush and for every goroutine to
// end (or, when its context ends first, closes every connection and still
// waits for the goroutines). Close is Shutdown without the wait for
// flushing. Every exported method is safe for concurrent use.
//
// # Stats
//
// Stats returns a plain snapshot: per population (the Hello label;
// PopulationNone before or without a Hello; labels beyond
// Config.MaxPopulations or not printable are PopulationOther) the
// connections, frames, bytes, accepted frames, applied inputs, handled
// requests, pongs, drops and rejections by reason name, disconnects by
// cause (a reason name, or Timeout, PeerClosed, WriteError) and lockouts
// (connections whose strike stage rose to lockout). Every frame counts as
// exactly one of accepted, dropped or rejected. The same decisions are
// split per channel (PopulationStats.Channels): inputs and requests under
// the policy channel their channel byte names, and three more rows, hello
// frames ("(hello)"), ping frames ("(ping)", on the ping channel or not)
// and frames that name no channel ("(unknown)": undecodable, oversize,
// server-to-client types, channel bytes past the policy). These rows are
// the only record of decisions (the population's accepted, dropped and
// rejected counts are their sums); they are batched per read (one atomic
// add per counter per read, no allocation) and bounded: a population holds
// (channels + 3) × (1 + 2 × core.NumReasons) counters per stripe. What
// every read adds to (frames, bytes, pongs, these rows) is striped:
// GOMAXPROCS stripes per population, rounded up to a power of two and at
// most 8, each padded to its own cache lines; each connection adds to the
// one stripe it is given in turn at accept, so readers running in parallel
// do not take the same lines from each other, and Stats sums the stripes
// (each count is in exactly one). The gate's own snapshot is included.
//
// Config.NoLimits bypasses the gate entirely (no gate call at all; frames
// are still decoded, handled and counted): the baseline for what the gate
// costs per frame.
//
// The server's CPU per frame is measured two ways: ReadService and
// TickService are the monotonic time spent handling reads (decode, gate,
// dispatch: not the read system calls) and ticks, to divide by Frames;
// this excludes whatever else runs in the process, so it is the figure to
// use in-process. ProcessCPU is the process's user+system CPU time
// (getrusage) since Start, the figure to use when the server runs
// standalone.
package server
