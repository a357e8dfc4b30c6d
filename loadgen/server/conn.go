package server

import (
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// conn is one client connection, served by two goroutines: the reader
// (readLoop: reads, gate calls, dispatch) and the writer (writeLoop:
// flushes the bounded outbound buffer). Fields marked "reader" are touched
// only by the reader goroutine.
type conn struct {
	s  *Server
	nc net.Conn
	h  core.Session // set by the reader before any command is queued

	pop    atomic.Pointer[popCounters]
	authed atomic.Bool

	hello    bool             // reader: a Hello was seen
	match    uint64           // reader: Message.Match
	stage    core.StrikeStage // reader: the last strike stage seen
	pingWord atomic.Uint64    // reader: the ping bucket without a ping channel
	t        tally            // reader: counts of the current read
	staged   []byte           // reader: the current read's replies and pongs, queued when it is counted (publish); len ≤ WriteBuffer
	pongs    uint64           // reader: pongs in staged
	leaving  cause            // reader: the current read ends the connection for this cause; 0 (core.None) if not
	m        wire.Msg         // reader: the frame being handled
	framer   *wire.Framer     // reader

	owed       atomic.Int32  // requests queued for the tick and not yet answered
	halfClosed atomic.Bool   // the client shut down its sending side: the reader waits for owed to reach 0
	drained    chan struct{} // the tick's signal that owed reached 0 after halfClosed
	closing    atomic.Bool   // no more frames are queued for writing; set under mu
	wake       chan struct{}
	writerDone chan struct{}

	mu    sync.Mutex // out, spare, closing's transitions, and pop's moves (a Hello), which a disconnect is counted against
	out   []byte     // frames waiting for the writer: len ≤ WriteBuffer (+ a final Disconnect)
	spare []byte     // the buffer the writer last wrote, reused
}

func (s *Server) newConn(nc net.Conn) *conn {
	if s.cfg.SendBuffer > 0 {
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetWriteBuffer(s.cfg.SendBuffer)
		}
	}
	c := &conn{s: s, nc: nc, wake: make(chan struct{}, 1), writerDone: make(chan struct{}), drained: make(chan struct{}, 1)}
	c.t.stripe = s.pops.stripe()
	c.t.countInto(s.pops.none)
	c.pop.Store(s.pops.none)
	s.pops.none.conns.Add(1)
	return c
}

// aLongTimeAgo is a deadline in the past: setting it makes a blocked Read
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

// openSession opens the connection's gate session for its source address
// (none when the server runs without limits) and reports whether it may
// go on: a refusal has sent its Disconnect.
func (c *conn) openSession(remote net.Addr, now int64) bool {
	if c.s.noLimits {
		return true
	}
	src, _ := addrPortOf(remote)
	h, v := c.s.gate.Open(src, now)
	if v.Action == core.Disconnect {
		c.disconnect(cause(v.Reason), true)
		return false
	}
	c.h = h
	return true
}

func (c *conn) readLoop() {
	s := c.s
	defer s.wg.Done()
	defer c.finish()

	now := atomicbucket.Nanotime()
	if !c.openSession(c.nc.RemoteAddr(), now) {
		return
	}
	fr, err := wire.NewFramer(c, s.maxFrame, s.readBuf)
	if err != nil { // New checked the sizes
		panic(err)
	}
	c.framer = fr
	if s.pingLim != nil {
		c.pingWord.Store(s.pingLim.FullWord(now))
	}

	idle, frameTO, helloTO := int64(s.cfg.IdleTimeout), int64(s.cfg.FrameTimeout), int64(s.cfg.HelloTimeout)
	helloBy := now + helloTO
	// Each timeout that applies has an exact time (lastFrame+idle, the
	// partial frame's partialSince+frameTO and, until the Hello, helloBy)
	// and a latest time, an eighth of that timeout later. The read
	// deadline is kept within [lo, hi]: lo the earliest exact time, hi the
	// earliest latest time (not the latest time of the timeout with the
	// earliest exact time: a partial frame begun just before the idle
	// timeout was otherwise held until idle/8 after it, beyond its own
	// frameTO/8). It is moved only when it leaves that range: a busy
	// connection re-arms it about once per eighth of a timeout instead of
	// after every read (a timer update per read was a few percent of a
	// loaded server's CPU; reads that end inside a frame restart the
	// partial-frame clock just as often as frames end). A connection is
	// closed at most an eighth of a timeout late, never early.
	lastFrame, partialSince, deadline := now, int64(0), int64(0)
	for {
		lo, hi := lastFrame+idle, lastFrame+idle+idle/8
		if partialSince != 0 {
			lo, hi = min(lo, partialSince+frameTO), min(hi, partialSince+frameTO+frameTO/8)
		}
		if !c.hello {
			lo, hi = min(lo, helloBy), min(hi, helloBy+helloTO/8)
		}
		if deadline < lo || deadline > hi {
			deadline = hi
			c.nc.SetReadDeadline(s.deadline(deadline))
		}
		if c.closing.Load() {
			return
		}
		n, err := fr.Fill()
		now := atomicbucket.Nanotime()
		if n > 0 {
			completed, stop := c.handleRead(n, now)
			if stop {
				return
			}
			if completed {
				lastFrame, partialSince = now, 0
			}
			if fr.Buffered() > 0 && partialSince == 0 {
				partialSince = now
			}
		}
		if err != nil {
			c.readError(err)
			return
		}
	}
}

// Read reads from the socket at most Server.maxRead bytes: the framer
// reads through it, so that no single read is larger than the byte budget's
// burst (a read that large could never pass Gate.Read, however slowly its
// bytes had arrived).
func (c *conn) Read(p []byte) (int, error) {
	return c.nc.Read(p[:min(len(p), c.s.maxRead)])
}

// readError ends the connection after a failed read.
func (c *conn) readError(err error) {
	switch {
	case c.closing.Load():
		// Someone else decided (the deadline was set to wake us).
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.disconnect(causeTimeout, true)
	case errors.Is(err, io.EOF) && c.owed.Load() > 0:
		c.drain()
	default: // io.EOF, a reset, a forced close
		c.disconnect(causePeerClosed, false)
	}
}

// drain serves a connection whose client has half-closed it (end of
// stream, its own side still reading) while requests it admitted are
// still waiting for the tick: the reader stops reading and waits until the
// tick has answered them all (or DrainTimeout has passed, or the server's
// last tick has run), then ends the connection as a peer close: the
// writer sends the answers queued and closes.
func (c *conn) drain() {
	c.halfClosed.Store(true)
	t := time.NewTimer(c.s.cfg.DrainTimeout)
	defer t.Stop()
	for c.owed.Load() > 0 && !c.closing.Load() {
		select {
		case <-c.drained:
		case <-t.C:
			c.disconnect(causePeerClosed, false)
			return
		case <-c.s.tickDone:
			c.disconnect(causePeerClosed, false)
			return
		}
	}
	c.disconnect(causePeerClosed, false)
}

// answered is the tick's note that one of the connection's requests was
// answered (or found its connection gone).
func (c *conn) answered() {
	if c.owed.Add(-1) == 0 && c.halfClosed.Load() {
		select {
		case c.drained <- struct{}{}:
		default:
		}
	}
}

// finish runs when the reader is done: it waits for the writer and closes
// the gate session (the disconnect was counted when it was decided).
func (c *conn) finish() {
	c.disconnect(causePeerClosed, false) // no-op when a cause is set
	<-c.writerDone
	c.nc.Close()
	if c.h != 0 {
		c.s.gate.Close(c.h, atomicbucket.Nanotime())
	}
	c.framer = nil
	c.s.removeConn(c)
}

// handleRead charges one read of n bytes and handles every whole frame it
// completed. completed says whether any frame was; stop that the
// connection is ending.
func (c *conn) handleRead(n int, now int64) (completed, stop bool) {
	s := c.s
	if c.closing.Load() {
		c.t.st.bytes.Add(uint64(n))
		return false, true
	}
	var v core.Verdict // Accept when there are no limits
	if !s.noLimits {
		v = s.gate.Read(c.h, uint32(n), now)
		if v.Reason != core.None { // a read that passes says nothing of the stage: its Verdict is zero
			c.noteStage(v.Stage)
		}
		if v.Action == core.Disconnect {
			c.t.st.bytes.Add(uint64(n))
			c.disconnect(cause(v.Reason), true)
			return false, true
		}
	}
	charged := v.Action == core.Accept
	t, m := &c.t, &c.m
	// Frames on a channel are checked a run at a time (conn_batch.go),
	// every other frame on its own after the run before it.
	var run frameRun
	for {
		err := c.framer.Next(m)
		if err == wire.ErrIncomplete {
			break
		}
		if c.closing.Load() { // a tick's answer overflowed, or Shutdown
			c.checkRun(&run, now)
			stop = true
			break
		}
		completed = true
		if charged {
			if added, flush := run.add(c, m, err); added {
				if flush && c.checkRun(&run, now) {
					stop = true
					break
				}
				continue
			}
			if c.checkRun(&run, now) {
				stop = true
				break
			}
		}
		t.frames++
		t.row = s.rowOf(m, err)
		if err == wire.ErrOversize {
			// The stream cannot be resynchronised: let the gate see it
			// (and strike), then disconnect whatever it said.
			if !s.noLimits {
				c.noteStage(s.gate.Check(core.Message{Session: c.h, Kind: unknownKind, Size: clampSize(m.Size), Flags: core.FlagCharged}, now).Stage)
			}
			t.drop(core.Oversize)
			c.leave(cause(core.Oversize))
			stop = true
			break
		}
		if !charged {
			// The byte budget refused the whole read: every frame in it is
			// dropped unseen (but decoded, to stay in sync).
			c.recordUnchecked(m, err, v, now)
			t.drop(v.Reason)
			continue
		}
		if c.frame(m, err, now) || c.leaving != 0 { // leaving: staging overflowed
			stop = true
			break
		}
	}
	if !stop && c.checkRun(&run, now) {
		stop = true
	}
	c.endRead(n)
	c.t.st.readNanos.Add(atomicbucket.Nanotime() - now) // on the line the read's bytes just took
	return completed, stop
}

// endRead counts the read's n bytes and the tally of its frames, and only
// then publishes what the read staged: a client that sees a reply or a
// Disconnect finds the read that sent it counted. The bytes count in the
// stripe counted into at the end of the read (t.st, which countInto moves
// when a Hello names a population), so those of the read that carried the
// Hello count under its label. The read's service time is added after
// this, by handleRead.
func (c *conn) endRead(n int) {
	c.t.st.bytes.Add(uint64(n))
	c.t.flush()
	c.publish()
}

// leave ends the connection for cause cs (never core.None) once the
// current read is counted (publish): the reader's disconnect. The first
// cause wins.
func (c *conn) leave(cs cause) {
	if c.leaving == 0 {
		c.leaving = cs
	}
}

func clampSize(n int) uint32 { return uint32(min(n, math.MaxUint32)) }

// frame handles one whole frame (err is nil or a malformed error) and
// reports whether the connection is ending.
func (c *conn) frame(m *wire.Msg, err error, now int64) (stop bool) {
	if err != nil {
		if m.Type == wire.TypeHello && !c.hello {
			// A first Hello whose lengths do not add up: the login fails
			// at once, answered, rather than waiting for HelloTimeout.
			c.hello = true
			return c.refuseHello(core.Malformed, m.Size, now)
		}
		return c.malformed(m.Size, now)
	}
	switch m.Type {
	case wire.TypeHello:
		return c.helloFrame(m, now)
	case wire.TypeInput, wire.TypeRequest:
		// m.ID is 0 for an input (Decode zeroes m).
		var fl core.MessageFlags
		if req := c.s.chanReq; int(m.Kind) < len(req) && req[m.Kind] != (m.Type == wire.TypeRequest) {
			fl = core.FlagMalformed // an input on a request channel, or a request on an input channel
		}
		return c.gated(uint16(m.Kind), m.ID, m.Size, fl, now, false, 0)
	case wire.TypePing:
		if c.s.pingKind >= 0 {
			return c.gated(uint16(c.s.pingKind), 0, m.Size, 0, now, true, m.Timestamp)
		}
		if c.s.noLimits || c.s.pingLim.TakeAt(&c.pingWord, now, 1).OK() {
			c.t.accept()
			c.pong(m.Timestamp)
		} else {
			c.t.drop(core.FrameLimit)
		}
		return false
	}
	// Reply, Disconnect, Pong: server-to-client types a client may not send.
	return c.malformed(m.Size, now)
}

// malformed checks a frame that names no channel as malformed (the gate
// says Oversize if it is larger than the policy's maximum frame).
func (c *conn) malformed(size int, now int64) (stop bool) {
	if c.s.noLimits {
		c.t.drop(core.Malformed)
		return false
	}
	v := c.s.gate.Check(core.Message{Session: c.h, Kind: unknownKind, Size: clampSize(size), Flags: core.FlagMalformed | core.FlagCharged}, now)
	return c.verdict(v, 0)
}

// gated checks a frame on a channel and acts on the verdict. For a ping
// (kind is then the ping channel), ts is its timestamp.
func (c *conn) gated(kind uint16, id uint64, size int, fl core.MessageFlags, now int64, ping bool, ts uint64) (stop bool) {
	if c.s.noLimits {
		// What the gate would refuse as malformed whatever its limits: a
		// frame of the wrong class, on no channel, or a request with id 0.
		if fl&core.FlagMalformed != 0 || int(kind) >= len(c.s.chanReq) || c.s.chanReq[kind] && id == 0 && !ping {
			c.t.drop(core.Malformed)
			return false
		}
		return c.admitted(kind, id, ping, ts)
	}
	return c.checked(c.s.gate.Check(c.message(kind, id, size, fl), now), kind, id, ping, ts)
}

// checked acts on the verdict v of a frame on channel kind, as gated does
// once it has it, and reports whether the connection is ending.
func (c *conn) checked(v core.Verdict, kind uint16, id uint64, ping bool, ts uint64) (stop bool) {
	if v.Action != core.Accept {
		return c.verdict(v, id)
	}
	c.noteStage(v.Stage)
	return c.admitted(kind, id, ping, ts)
}

// admitted runs a frame on channel kind that the gate accepted (or that
// runs without limits): a pong for a ping, else its command queued.
func (c *conn) admitted(kind uint16, id uint64, ping bool, ts uint64) (stop bool) {
	if ping {
		c.t.accept()
		c.pong(ts)
		return false
	}
	if int(kind) >= len(c.s.chanReq) {
		// Accepted only in shadow mode: there is nothing to run.
		c.t.accept()
		return false
	}
	if id != 0 {
		c.owed.Add(1) // before the tick can answer it
	}
	if r := c.s.enqueue(command{c: c, id: id, kind: uint8(kind), authed: c.authed.Load()}); r != core.None {
		if id != 0 {
			c.owed.Add(-1)
		}
		if id == 0 {
			c.t.drop(r)
			return false
		}
		c.t.reject(r)
		c.reply(id, wire.StatusRejected, uint8(r), 0)
		if !c.s.noLimits {
			c.s.gate.Done(c.h, id)
		}
		return false
	}
	c.t.accept()
	return false
}

// verdict acts on a refusal (or a shadow-mode acceptance of a frame with
// nothing to run) and reports whether the connection is ending.
func (c *conn) verdict(v core.Verdict, id uint64) (stop bool) {
	c.noteStage(v.Stage)
	switch v.Action {
	case core.Accept:
		c.t.accept()
	case core.Drop:
		c.t.drop(v.Reason)
	case core.Reject:
		c.t.reject(v.Reason)
		if id != 0 {
			c.reply(id, wire.StatusRejected, uint8(v.Reason), uint64(max(v.RetryAfter, 0)))
		}
	case core.Disconnect:
		c.t.drop(v.Reason)
		c.leave(cause(v.Reason))
		return true
	}
	return false
}

// helloFrame opens the session's account: the first Hello of the current
// version authenticates; any other Hello is malformed.
func (c *conn) helloFrame(m *wire.Msg, now int64) (stop bool) {
	if c.hello {
		return c.malformed(m.Size, now)
	}
	c.hello = true
	// The first Hello is answered once checked, a refused one too (before
	// the Disconnect), so that a client tells a refused login from a
	// connection refused before its Hello was checked.
	if m.Version != wire.Version {
		return c.refuseHello(core.Malformed, m.Size, now)
	}
	// Count the hello and everything after it under the client's label.
	c.t.frames--
	old := c.pop.Load() // the reader's own: only it moves c.pop
	c.t.flush()
	pop := c.s.pops.get(m.Label)
	if pop != old {
		// Under mu, which closeLocked counts a disconnect under: a
		// connection another goroutine ends meanwhile (Shutdown, a tick's
		// answer overflowing) is counted, connection and disconnect
		// alike, in the population it ended in.
		c.mu.Lock()
		if c.closing.Load() {
			c.mu.Unlock()
			return true
		}
		pop.conns.Add(1)
		old.conns.Add(^uint64(0))
		c.pop.Store(pop)
		c.mu.Unlock()
	}
	c.t.countInto(pop)
	c.t.frames++
	acct, r := c.s.tokens.Account(m.Token)
	if r != core.None {
		return c.refuseHello(r, m.Size, now)
	}
	if !c.s.noLimits {
		v := c.s.gate.Authenticate(c.h, acct, now)
		if v.Action == core.Disconnect {
			c.reply(0, wire.StatusRejected, uint8(v.Reason), uint64(max(v.RetryAfter, 0)))
			return c.verdict(v, 0)
		}
	}
	if c.s.cfg.MatchOf != nil {
		c.match = c.s.cfg.MatchOf(pop.name, acct)
	}
	c.authed.Store(true)
	c.recordLabel(pop.name, now)
	c.t.accept()
	c.reply(0, wire.StatusOK, 0, 0)
	return false
}

// refuseHello answers the first Hello with a refusal for reason r and
// ends the connection for it. A malformed Hello (a bad version, lengths
// that do not add up, an empty token) is also checked as malformed, so it
// earns strikes; a Hello refused for want of room (TableFull) is not.
func (c *conn) refuseHello(r core.Reason, size int, now int64) (stop bool) {
	c.reply(0, wire.StatusRejected, uint8(r), 0)
	if r == core.Malformed {
		c.malformed(size, now)
	} else {
		c.t.drop(r)
	}
	c.leave(cause(r))
	return true
}

// noteStage counts a rise of the strike stage into lockout.
func (c *conn) noteStage(st core.StrikeStage) {
	if st >= core.StageLockout && c.stage < core.StageLockout {
		c.pop.Load().lockouts.Add(1)
	}
	c.stage = st
}

// A client never reads a frame the server's stats do not count yet (its
// own frame counts, the outcome it reports, the reply, pong or Disconnect
// itself):
//
//   - the reader stages its replies and pongs in a buffer of its own
//     (pong, reply) and hands them to the writer only once its read's
//     tally is published, with the Disconnect of a read that ends the
//     connection (publish);
//   - the tick counts its replies under the lock that queues them (answer),
//     and a Disconnect is counted under the lock that queues it
//     (closeLocked), before the writer can take them.
//
// What is left: a command's frame is counted when the read that queued it
// ends, which may be after the tick has answered it.

// pong and reply stage a frame of the reader's. Staging is bounded like
// the outbound buffer: a frame that would take it past WriteBuffer ends
// the connection with reason QueueFull instead (that frame could not be
// queued even into an empty outbound buffer), and the read stops there.
// publish then queues what was staged if it fits beside what is waiting,
// and the Disconnect after it.
func (c *conn) pong(ts uint64) {
	if c.stageRoom(wire.PongSize) {
		c.staged = wire.AppendPong(c.staged, ts)
		c.pongs++
	}
}

func (c *conn) reply(id uint64, st wire.Status, reason uint8, retry uint64) {
	if c.stageRoom(wire.ReplySize) {
		c.staged = wire.AppendReply(c.staged, id, st, reason, retry)
	}
}

// stageRoom makes room for n more staged bytes, or leaves with QueueFull and
// reports false when they would take the staged frames past WriteBuffer.
func (c *conn) stageRoom(n int) bool {
	if len(c.staged)+n > c.s.cfg.WriteBuffer {
		c.leave(cause(core.QueueFull))
		return false
	}
	c.staged = grow(c.staged, n, c.s.cfg.WriteBuffer)
	return true
}

// publish queues the current read's staged frames for the writer, and
// then the Disconnect of a read that ends the connection, in one critical
// section: one lock per read, not per frame. Frames that would not fit in
// WriteBuffer end the connection with reason QueueFull instead (its client
// is not reading), and none of them is sent; but a read that ends the
// connection keeps its own cause, which came first (the overflow is only
// found here, once the read is over): its Disconnect follows the frames
// already waiting, without the read's own.
func (c *conn) publish() {
	if len(c.staged) == 0 && c.leaving == 0 {
		return
	}
	c.mu.Lock()
	queued, full := c.queueLocked(c.staged)
	if full {
		c.leave(cause(core.QueueFull)) // the first cause wins: a read ending the connection keeps its own
	}
	if queued && c.pongs != 0 {
		// The population the read's bytes count under, in the
		// connection's stripe. Its counter is shared by the other
		// connections of that stripe: a read with no pong (a refusal, a
		// Hello) does not write it.
		c.t.st.pongs.Add(c.pongs)
	}
	stop := (queued || full) && c.leaving != 0 // not when another goroutine closed it first
	switch {
	case stop:
		c.closeLocked(c.leaving, true) // wakes the writer
	case queued:
		c.wakeWriter()
	}
	c.mu.Unlock()
	if stop {
		c.stopReader()
	}
	c.staged, c.pongs, c.leaving = c.staged[:0], 0, 0
}

// answer is the tick's reply to request id. It is counted in counted under
// the lock that queues it, before the writer can take it. It encodes the
// frame on the stack, outside the lock.
func (c *conn) answer(id uint64, st wire.Status, counted *atomic.Uint64) {
	var b [wire.ReplySize]byte
	frame := wire.AppendReply(b[:0], id, st, 0, 0)
	c.mu.Lock()
	queued, ended := c.queueLocked(frame)
	if queued {
		counted.Add(1)
	}
	if ended { // its client is not reading
		c.closeLocked(cause(core.QueueFull), true)
	}
	c.mu.Unlock()
	switch {
	case ended:
		c.stopReader()
	case queued:
		c.wakeWriter()
	}
}

// queueLocked appends frames to the outbound buffer, without waking the
// writer. It queues nothing when the connection is closing, or when the
// frames do not fit in WriteBuffer: then full says so, and the caller ends
// the connection (its client is not reading) and stops the reader once it
// has released mu. Called with mu held.
func (c *conn) queueLocked(frames []byte) (queued, full bool) {
	if c.closing.Load() {
		return false, false
	}
	if len(c.out)+len(frames) > c.s.cfg.WriteBuffer {
		return false, true
	}
	c.out = grow(c.out, len(frames), c.s.cfg.WriteBuffer+wire.DisconnectSize)
	c.out = append(c.out, frames...)
	return true, false
}

// disconnect ends the connection for cause cs: unless it is already
// ending, it queues a Disconnect frame (when frame is set) after whatever
// is waiting, and tells both goroutines. Safe from any goroutine.
func (c *conn) disconnect(cs cause, frame bool) {
	c.mu.Lock()
	if c.closing.Load() {
		c.mu.Unlock()
		return
	}
	c.closeLocked(cs, frame)
	c.mu.Unlock()
	c.stopReader()
}

// closeLocked marks the connection closing with cause cs and queues the
// Disconnect frame. The buffer keeps DisconnectSize bytes of room beyond
// WriteBuffer for it, so the frame never makes it grow past its bound.
func (c *conn) closeLocked(cs cause, frame bool) {
	c.closing.Store(true)
	c.pop.Load().disconnects[cs].Add(1) // before the writer can send the frame
	if frame {
		var reason uint8
		if cs < cause(core.NumReasons) {
			reason = uint8(cs)
		}
		c.out = grow(c.out, wire.DisconnectSize, c.s.cfg.WriteBuffer+wire.DisconnectSize)
		c.out = wire.AppendDisconnect(c.out, reason)
	}
	c.wakeWriter()
}

// grow returns b able to take n more bytes. A buffer starts small and
// doubles, but never beyond limit (callers keep len(b) + n within it: the
// outbound buffer within WriteBuffer, but for the final Disconnect, which
// its limit has room for; the staged frames within WriteBuffer).
func grow(b []byte, n, limit int) []byte {
	need := len(b) + n
	if need <= cap(b) {
		return b
	}
	nb := make([]byte, len(b), min(max(2*cap(b), need, minBuffer), limit))
	copy(nb, b)
	return nb
}

// minBuffer is the first size of an outbound or a staging buffer.
const minBuffer = 512

// stopReader makes a blocked Read return at once; the reader sees closing
// and ends.
func (c *conn) stopReader() { c.nc.SetReadDeadline(aLongTimeAgo) }

func (c *conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes what publish, answer and closeLocked queue, swapping the outbound
// buffer with a spare so senders never wait on the socket. Each write may
// block at most WriteTimeout. Once the connection is closing and every
// queued byte is written, it closes the socket.
func (c *conn) writeLoop() {
	s := c.s
	defer s.wg.Done()
	defer close(c.writerDone)
	wto, wdeadline := int64(s.cfg.WriteTimeout), int64(0)
	for range c.wake {
		for {
			c.mu.Lock()
			if len(c.out) == 0 {
				closing := c.closing.Load()
				c.mu.Unlock()
				if closing {
					c.nc.Close()
					return
				}
				break
			}
			buf := c.out
			c.out, c.spare = c.spare[:0], nil
			c.mu.Unlock()
			// Armed WriteTimeout·1.5 ahead and re-armed only once less
			// than WriteTimeout is left: every write gets at least
			// WriteTimeout, and a busy connection updates its timer once
			// per WriteTimeout/2 rather than once per write.
			if now := atomicbucket.Nanotime(); wdeadline-now < wto {
				wdeadline = now + wto + wto/2
				c.nc.SetWriteDeadline(s.deadline(wdeadline))
			}
			_, err := c.nc.Write(buf)
			c.mu.Lock()
			c.spare = buf[:0]
			if err != nil {
				if !c.closing.Load() {
					c.closeLocked(causeWriteError, false)
				}
				c.out = nil
				c.mu.Unlock()
				c.nc.Close()
				return
			}
			c.mu.Unlock()
		}
	}
}
