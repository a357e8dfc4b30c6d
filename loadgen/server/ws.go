package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// WSConfig configures the server's WebSocket listener: the reference
// protocol carried as one binary WebSocket message per frame (the message's
// payload is the whole frame, its length prefix included). The zero value
// listens on no WebSocket address. It is plain data, copied by New with the
// rest of Config.
type WSConfig struct {
	// Addr is the WebSocket listen address (host:port); "" means none. The
	// host must be a loopback IP literal or "localhost" unless
	// Config.AllowNonLoopback is set, as for Config.Addr. Port 0 picks a
	// free port: see Server.WSAddr.
	Addr string
	// UpgradeTimeout bounds the HTTP upgrade: the request's headers must
	// arrive, and the 101 response be written, within it (a slow upgrade
	// is closed then). Default 5s.
	UpgradeTimeout time.Duration
}

// DefaultUpgradeTimeout is WSConfig.UpgradeTimeout's default.
const DefaultUpgradeTimeout = 5 * time.Second

// wsMaxHeader bounds the upgrade request's header bytes (net/http allows
// 4 KiB beyond it before it refuses the request).
const wsMaxHeader = 4 << 10

func (w *WSConfig) normalize(allowNonLoopback bool) error {
	if w.Addr == "" {
		return nil
	}
	w.UpgradeTimeout = cmp.Or(w.UpgradeTimeout, DefaultUpgradeTimeout)
	if w.UpgradeTimeout < 0 || w.UpgradeTimeout > MaxTimeout {
		return &ConfigError{Field: "WebSocket.UpgradeTimeout", Msg: fmt.Sprintf("%v is not in [0, %v]", w.UpgradeTimeout, MaxTimeout)}
	}
	return checkListenAddr("WebSocket.Addr", w.Addr, allowNonLoopback)
}

// wsListener is the server's WebSocket front: an http.Server that only
// upgrades, over a listener that caps the connections still upgrading.
type wsListener struct {
	s    *Server
	ln   net.Listener
	addr netip.AddrPort
	hs   *http.Server
	up   websocket.Upgrader
	// pending counts accepted connections not yet upgraded (or closed):
	// with the open ones, at most MaxConns.
	pending  atomic.Int64
	handlers sync.WaitGroup // upgrade handlers running; added to under s.mu while not stopping
}

// listenWS binds the WebSocket address, if one is configured (nil, nil
// otherwise), and checks that it is loopback like Start does.
func (s *Server) listenWS() (net.Listener, error) {
	if s.cfg.WebSocket.Addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", s.cfg.WebSocket.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen websocket: %w", err)
	}
	ap, ok := addrPortOf(ln.Addr())
	if !ok || (!s.cfg.AllowNonLoopback && !ap.Addr().Unmap().IsLoopback()) {
		ln.Close()
		return nil, &ConfigError{Field: "WebSocket.Addr", Msg: fmt.Sprintf("%q listens on %v, not a loopback address", s.cfg.WebSocket.Addr, ln.Addr()), Err: ErrNonLoopback}
	}
	return ln, nil
}

// WSConnMemoryBound returns the most memory one WebSocket connection
// holds, in bytes, with this configuration: the message buffer (the
// maximum frame), gorilla's read buffer (maxRead), the two write buffers
// and the staged frames of a TCP connection, the WebSocket-framed copy
// the writer sends (its frames and a header of at most 10 bytes each, so
// at most twice what it copies), and WSConnOverhead. A connection still
// upgrading holds less: net/http's buffers of its request, within
// WSConnOverhead.
func (s *Server) WSConnMemoryBound() int {
	return s.maxFrame + s.maxRead + 4*(s.cfg.WriteBuffer+wire.DisconnectSize) + s.cfg.WriteBuffer + WSConnOverhead
}

// WSConnOverhead is ConnOverhead for a WebSocket connection: the same,
// and gorilla's connection state, the http.Server's record of it and the
// upgrade's leftovers, as an upper bound in bytes.
const WSConnOverhead = ConnOverhead + 12<<10

// closeListener closes ln unless it is nil.
func closeListener(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}

// startWSLocked starts serving WebSocket upgrades on ln (nil: nothing to
// do). Called by Start with s.mu held, so that the goroutine is counted
// before a Shutdown can wait for it.
func (s *Server) startWSLocked(ln net.Listener) {
	if ln == nil {
		return
	}
	ap, _ := addrPortOf(ln.Addr())
	l := &wsListener{s: s, addr: ap}
	l.ln = &wsCountingListener{Listener: ln, l: l}
	to := s.cfg.WebSocket.UpgradeTimeout
	l.hs = &http.Server{
		Handler:           http.HandlerFunc(l.upgrade),
		ReadHeaderTimeout: to,
		ReadTimeout:       to,
		WriteTimeout:      to,
		IdleTimeout:       to,
		MaxHeaderBytes:    wsMaxHeader,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, wsRawKey{}, c)
		},
	}
	l.hs.SetKeepAlivesEnabled(false) // one request per connection: an upgrade, or a refusal and the close
	l.up = websocket.Upgrader{
		HandshakeTimeout: to,
		// The connection's reads are at most maxRead bytes (wsRaw.Read
		// caps them too), so that one read can always pass the byte
		// budget, as on TCP.
		ReadBufferSize:  s.maxRead,
		WriteBufferPool: &wsWritePool, // never used but by gorilla's own writers: no buffer held per connection
		// Browser games are served from any origin; the harness listens
		// on loopback only.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	s.ws = l
	s.wg.Add(1)
	s.acceptWG.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.acceptWG.Done()
		l.hs.Serve(l.ln) // returns when closeWS closes it
	}()
}

var wsWritePool sync.Pool

type wsRawKey struct{}

// WSAddr returns the address the WebSocket listener is bound to, or the
// zero AddrPort when there is none (or before Start).
func (s *Server) WSAddr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws == nil {
		return netip.AddrPort{}
	}
	return s.ws.addr
}

// closeWS stops accepting WebSocket connections, closes those still
// upgrading and waits for the upgrade handlers (connections already
// upgraded are the server's conns, which shutdown ends). Called by
// shutdown once stopping is set.
func (s *Server) closeWS() {
	s.mu.Lock()
	l := s.ws
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.hs.Close()
	l.handlers.Wait()
}

// wsCountingListener refuses a connection when MaxConns are open or
// upgrading, and wraps each one it accepts in a wsRaw.
type wsCountingListener struct {
	net.Listener
	l *wsListener
}

func (cl *wsCountingListener) Accept() (net.Conn, error) {
	s := cl.l.s
	for {
		nc, err := cl.Listener.Accept()
		if err != nil {
			return nil, err
		}
		s.accepted.Add(1)
		if s.open.Load()+uint64(cl.l.pending.Load()) >= uint64(s.cfg.MaxConns) {
			s.refused.Add(1)
			nc.Close()
			continue
		}
		cl.l.pending.Add(1)
		return &wsRaw{Conn: nc, l: cl.l}, nil
	}
}

// wsRaw is a WebSocket connection's socket. Before the upgrade it is the
// HTTP server's; after it, every read it makes is charged to the gate's
// byte budget as it arrives (wsConn.charge): WebSocket headers, masks and
// control frames included, each read at most maxRead bytes.
type wsRaw struct {
	net.Conn
	l       *wsListener
	w       atomic.Pointer[wsConn] // set once upgraded
	settled atomic.Bool            // no longer counted in pending
}

func (r *wsRaw) Read(p []byte) (int, error) {
	w := r.w.Load()
	if w == nil {
		return r.Conn.Read(p)
	}
	n, err := r.Conn.Read(p[:min(len(p), w.c.s.maxRead)])
	if n > 0 && !w.charge(n) {
		return 0, errWSRefused
	}
	return n, err
}

func (r *wsRaw) Close() error {
	r.settle()
	return r.Conn.Close()
}

// settle takes the connection out of pending, once.
func (r *wsRaw) settle() {
	if r.settled.CompareAndSwap(false, true) {
		r.l.pending.Add(-1)
	}
}

// errWSRefused ends a read the byte budget disconnected on.
var errWSRefused = errors.New("server: websocket read refused by the gate")

// errWSStop ends gorilla's read from a control frame's handler when the
// connection is ending.
var errWSStop = errors.New("server: websocket connection ending")

// upgrade is the only HTTP handler: it upgrades, registers the connection
// and starts its two goroutines.
func (l *wsListener) upgrade(rw http.ResponseWriter, r *http.Request) {
	s := l.s
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		http.Error(rw, "shutting down", http.StatusServiceUnavailable)
		return
	}
	l.handlers.Add(1)
	s.mu.Unlock()
	defer l.handlers.Done()
	ws, err := l.up.Upgrade(rw, r, nil)
	if err != nil {
		return // gorilla answered with an HTTP error
	}
	raw, ok := ws.NetConn().(*wsRaw)
	if !ok { // cannot happen: every conn comes from wsCountingListener
		ws.Close()
		return
	}
	w := &wsConn{raw: raw, ws: ws, buf: make([]byte, s.maxFrame)}
	s.mu.Lock()
	if s.stopping || s.open.Load() >= uint64(s.cfg.MaxConns) {
		s.mu.Unlock()
		s.refused.Add(1)
		raw.Close()
		return
	}
	c := s.newConn(w)
	w.c = c
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	n := s.open.Add(1)
	s.mu.Unlock()
	raw.settle()
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	raw.w.Store(w)
	go c.writeLoop()
	go w.readLoop()
}

// wsConn is one upgraded connection: the conn's net.Conn (its writer
// writes through Write, which sends each reference frame as one binary
// message) and the state of its reader (wsConn.readLoop, which replaces
// conn.readLoop: one message is one frame). Fields marked "reader" are
// touched only by the reader goroutine.
type wsConn struct {
	c   *conn
	raw *wsRaw
	ws  *websocket.Conn

	buf     []byte       // reader: the message being read, maxFrame bytes
	readV   core.Verdict // reader: the byte budget's verdict on the latest read; a message completed by a refused read is dropped unseen
	pending int          // reader: bytes read and not yet counted (endRead)
	readAt  int64        // reader: when the latest read was made: the time of the gate's decisions on the messages it completes

	wmu sync.Mutex // out, wdl and every write to the socket
	out []byte     // the writer's WebSocket-framed copy of the frames it writes
	wdl time.Time  // the writer's write deadline
}

// WebSocket opcodes and header sizes (RFC 6455 §5.2).
const (
	wsFin      = 0x80
	wsOpBinary = 0x2
	wsOpPong   = 0xA
)

// appendWSHeader appends an unmasked final frame's header for a payload
// of n bytes.
func appendWSHeader(dst []byte, op byte, n int) []byte {
	switch {
	case n < 126:
		return append(dst, wsFin|op, byte(n))
	case n <= math.MaxUint16:
		return append(dst, wsFin|op, 126, byte(n>>8), byte(n))
	default:
		return append(dst, wsFin|op, 127, 0, 0, 0, 0, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// Write sends b, whole frames of the reference protocol as the conn
// queues them, as one binary message per frame, in one write to the
// socket.
func (w *wsConn) Write(b []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	out := w.out[:0]
	for off := 0; off < len(b); {
		size, err := wire.Peek(b[off:], math.MaxInt32)
		if err != nil || size > len(b)-off { // never: the conn queues whole frames
			size = len(b) - off
		}
		out = appendWSHeader(out, wsOpBinary, size)
		out = append(out, b[off:off+size]...)
		off += size
	}
	w.out = out
	if _, err := w.raw.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// writeControl writes one control frame from the reader, between the
// writer's writes, within WriteTimeout; the writer's deadline is restored
// after it.
func (w *wsConn) writeControl(op byte, data []byte) error {
	var b [2 + 125]byte
	frame := append(appendWSHeader(b[:0], op, len(data)), data...)
	w.wmu.Lock()
	defer w.wmu.Unlock()
	s := w.c.s
	w.raw.Conn.SetWriteDeadline(s.deadline(atomicbucket.Nanotime() + int64(s.cfg.WriteTimeout)))
	_, err := w.raw.Conn.Write(frame)
	w.raw.Conn.SetWriteDeadline(w.wdl)
	return err
}

func (w *wsConn) Read([]byte) (int, error) {
	return 0, errors.New("server: a websocket conn is read by its own loop")
}
func (w *wsConn) Close() error                      { return w.raw.Close() }
func (w *wsConn) LocalAddr() net.Addr               { return w.raw.LocalAddr() }
func (w *wsConn) RemoteAddr() net.Addr              { return w.raw.RemoteAddr() }
func (w *wsConn) SetDeadline(t time.Time) error     { return errors.ErrUnsupported }
func (w *wsConn) SetReadDeadline(t time.Time) error { return w.raw.SetReadDeadline(t) }
func (w *wsConn) SetWriteDeadline(t time.Time) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.wdl = t
	return w.raw.SetWriteDeadline(t)
}

// charge puts one read of n bytes through the byte budget and reports
// whether the connection goes on (false: the gate disconnected it).
func (w *wsConn) charge(n int) bool {
	c, s := w.c, w.c.s
	w.pending += n
	w.readAt = atomicbucket.Nanotime()
	if s.noLimits {
		return true
	}
	if c.closing.Load() {
		return false
	}
	v := s.gate.Read(c.h, uint32(n), w.readAt)
	if v.Reason != core.None {
		c.noteStage(v.Stage)
	}
	w.readV = v
	if v.Action == core.Disconnect {
		c.t.st.bytes.Add(uint64(w.pending))
		w.pending = 0
		c.disconnect(cause(v.Reason), true)
		return false
	}
	return true
}

// endRead counts what was read since the last one and publishes what
// was staged (conn.endRead), with the service time since start.
func (w *wsConn) endRead(start int64) {
	w.c.endRead(w.pending)
	w.pending = 0
	w.c.t.st.readNanos.Add(atomicbucket.Nanotime() - start)
}

// readLoop is conn.readLoop for a WebSocket connection: it reads one
// message at a time, each the whole of one frame, bounded by the
// connection's timeouts (a message's frame timeout runs from its first
// frame's header).
func (w *wsConn) readLoop() {
	c := w.c
	s := c.s
	defer s.wg.Done()
	defer c.finish()

	now := atomicbucket.Nanotime()
	if !c.openSession(w.raw.RemoteAddr(), now) {
		return
	}
	if s.pingLim != nil {
		c.pingWord.Store(s.pingLim.FullWord(now))
	}
	w.ws.SetReadLimit(int64(s.maxFrame)) // checked against each frame's header, before its payload is read
	w.ws.SetPingHandler(func(d string) error { return w.control(d, true) })
	w.ws.SetPongHandler(func(d string) error { return w.control(d, false) })

	idle, frameTO, helloTO := int64(s.cfg.IdleTimeout), int64(s.cfg.FrameTimeout), int64(s.cfg.HelloTimeout)
	helloBy := now + helloTO
	lastFrame, deadline := now, int64(0)
	// arm keeps the read deadline within [lo, hi] as conn.readLoop does,
	// with the frame timeout of a message begun at partialSince (0: none).
	arm := func(partialSince int64) {
		lo, hi := lastFrame+idle, lastFrame+idle+idle/8
		if partialSince != 0 {
			lo, hi = min(lo, partialSince+frameTO), min(hi, partialSince+frameTO+frameTO/8)
		}
		if !c.hello {
			lo, hi = min(lo, helloBy), min(hi, helloBy+helloTO/8)
		}
		if deadline < lo || deadline > hi {
			deadline = hi
			w.raw.SetReadDeadline(s.deadline(deadline))
		}
	}
	for {
		arm(0)
		if c.closing.Load() {
			return
		}
		mt, r, err := w.ws.NextReader()
		if err == nil {
			arm(atomicbucket.Nanotime())
			var n int
			n, err = readMessage(r, w.buf)
			if err == nil {
				now := atomicbucket.Nanotime()
				w.message(mt, w.buf[:n], now)
				lastFrame = now
				continue
			}
		}
		if errors.Is(err, websocket.ErrReadLimit) {
			w.oversize()
			return
		}
		w.readError(err)
		return
	}
}

// readMessage reads the rest of a message into buf (the read limit keeps
// it within buf).
func readMessage(r io.Reader, buf []byte) (int, error) {
	n := 0
	for {
		k, err := r.Read(buf[n:])
		n += k
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if n == len(buf) { // the limit allows no more: the next read says EOF or ErrReadLimit
			var one [1]byte
			k, err = r.Read(one[:])
			if err == io.EOF {
				return n, nil
			}
			if err == nil && k > 0 {
				err = websocket.ErrReadLimit
			}
			return n, err
		}
	}
}

// message handles one whole message: exactly one frame, or malformed.
func (w *wsConn) message(mt int, b []byte, now int64) {
	c, s := w.c, w.c.s
	t, m := &c.t, &c.m
	err := decodeWhole(b, mt == websocket.BinaryMessage, s.maxFrame, m)
	t.frames++
	t.row = s.rowOf(m, err)
	if w.readV.Action != core.Accept {
		t.drop(w.readV.Reason) // the byte budget refused the read that completed it
	} else {
		// Decided at the time of the read that completed it, as the
		// frames of one read over TCP are decided at that read's time:
		// the messages of one read see the same strike score, not one
		// decayed by the microseconds between them (four malformed
		// messages in one read reach the ladder's fourth stage, as the
		// same four frames over TCP do, not its third).
		c.frame(m, err, w.readAt)
	}
	w.endRead(now)
}

// oversize handles a message whose header declares more than the maximum
// frame: as on TCP, the gate sees it (and strikes), and the connection
// ends with reason Oversize, before its payload is read.
func (w *wsConn) oversize() {
	c, s := w.c, w.c.s
	now := atomicbucket.Nanotime()
	c.t.frames++
	c.t.row = s.rowUnknown
	if !s.noLimits && !c.closing.Load() {
		c.noteStage(s.gate.Check(core.Message{Session: c.h, Kind: unknownKind, Size: clampSize(s.maxFrame + 1), Flags: core.FlagCharged}, now).Stage)
	}
	c.t.drop(core.Oversize)
	c.leave(cause(core.Oversize))
	w.endRead(now)
}

// readError ends the connection after a failed read (conn.readError).
func (w *wsConn) readError(err error) {
	c := w.c
	w.c.t.st.bytes.Add(uint64(w.pending))
	w.pending = 0
	switch {
	case c.closing.Load(), errors.Is(err, errWSRefused), errors.Is(err, errWSStop):
	case wsTimeout(err): // gorilla hides os.ErrDeadlineExceeded behind a net.Error of its own
		c.disconnect(causeTimeout, true)
	default: // a close frame, io.EOF, a reset, a protocol error
		c.disconnect(causePeerClosed, false)
	}
}

func wsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// control charges a ping or pong the client sent as a Ping frame of the
// reference protocol would be (the policy's ping channel, or the server's
// own ping bucket), and answers an accepted ping with a pong: control
// frames pass no budget a Ping could not. Their bytes were charged as
// they were read. It runs on the reader, inside gorilla's read.
func (w *wsConn) control(data string, ping bool) error {
	c, s := w.c, w.c.s
	if c.closing.Load() {
		return errWSStop
	}
	now := atomicbucket.Nanotime()
	c.t.frames++
	c.t.row = s.rowPing
	answer := false
	switch {
	case w.readV.Action != core.Accept:
		c.t.drop(w.readV.Reason)
	case s.noLimits:
		c.t.accept()
		answer = ping
	case s.pingKind >= 0:
		v := s.gate.Check(core.Message{Session: c.h, Match: c.match, Size: uint32(2 + len(data)), Kind: uint16(s.pingKind), Flags: core.FlagCharged}, now)
		if v.Action == core.Accept {
			c.noteStage(v.Stage)
			c.t.accept()
			answer = ping
		} else {
			c.verdict(v, 0)
		}
	case s.pingLim.TakeAt(&c.pingWord, now, 1).OK():
		c.t.accept()
		answer = ping
	default:
		c.t.drop(core.FrameLimit)
	}
	w.endRead(now)
	if c.closing.Load() {
		return errWSStop
	}
	if answer {
		if err := w.writeControl(wsOpPong, []byte(data)); err != nil {
			c.disconnect(causeWriteError, false)
			return errWSStop
		}
	}
	return nil
}
