package server

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// UDPConfig configures the server's UDP listener: the reference protocol
// carried one frame per datagram, in sessions opened by a cookie handshake
// (see the wire package's "Datagrams" and docs/transports.md). The zero
// value listens on no UDP address. It is plain data, copied by New with
// the rest of Config.
//
// A session is keyed by the connection id its client chose and its source
// address together. It lives until its client sends a Disconnect frame,
// the gate or the server ends it, or no datagram of it has arrived for
// Config.IdleTimeout (checked by a sweep, at most an eighth of the
// timeout late): UDP has no read deadlines to set per connection. Sessions
// count against Config.MaxConns with the TCP and WebSocket connections.
type UDPConfig struct {
	// Addr is the UDP listen address (host:port); "" means none. The host
	// must be a loopback IP literal or "localhost" unless
	// Config.AllowNonLoopback is set. Port 0 picks a free port: see
	// Server.UDPAddr.
	Addr string
	// CookieLifetime bounds how long a handshake cookie is accepted after
	// it was issued: between half of it and all of it (cookies are minted
	// per time bucket of half the lifetime, and the current and previous
	// buckets are accepted). Default 10s.
	CookieLifetime time.Duration
	// HandshakeRate bounds the Cookie datagrams the listener sends per
	// second, over all sources (burst the same): a handshake flood costs
	// the server at most this many replies, none larger than the
	// datagram it answers. Default 10000.
	HandshakeRate float64
	// ReadBuffer is the socket's receive buffer (SO_RCVBUF) in bytes: the
	// datagrams that wait while the reader is busy, beyond which the
	// kernel drops them. The kernel may cap it (net.core.rmem_max on
	// Linux). Default 4 MiB; negative leaves the OS default.
	ReadBuffer int
}

// Defaults of UDPConfig.
const (
	DefaultCookieLifetime = 10 * time.Second
	DefaultHandshakeRate  = 10000.0
	DefaultUDPReadBuffer  = 4 << 20
	// minCookieLifetime keeps the cookie's time buckets at least a
	// millisecond long.
	minCookieLifetime = 2 * time.Millisecond
)

func (u *UDPConfig) normalize(allowNonLoopback bool) error {
	if u.Addr == "" {
		return nil
	}
	u.CookieLifetime = cmp.Or(u.CookieLifetime, DefaultCookieLifetime)
	u.HandshakeRate = cmp.Or(u.HandshakeRate, DefaultHandshakeRate)
	u.ReadBuffer = cmp.Or(u.ReadBuffer, DefaultUDPReadBuffer)
	if u.CookieLifetime < minCookieLifetime || u.CookieLifetime > MaxTimeout {
		return &ConfigError{Field: "UDP.CookieLifetime", Msg: fmt.Sprintf("%v is not in [%v, %v]", u.CookieLifetime, minCookieLifetime, MaxTimeout)}
	}
	if math.IsNaN(u.HandshakeRate) || u.HandshakeRate <= 0 || math.IsInf(u.HandshakeRate, 0) {
		return &ConfigError{Field: "UDP.HandshakeRate", Msg: fmt.Sprintf("%v is not a positive rate", u.HandshakeRate)}
	}
	return checkListenAddr("UDP.Addr", u.Addr, allowNonLoopback)
}

// UDPStats counts what the UDP listener saw and sent, beside the
// per-population counts of Stats (a session's frames count there, as a
// connection's do). Unverified counts are of datagrams from sources that
// had no session: what the amplification guarantee is about.
type UDPStats struct {
	Datagrams uint64 // datagrams received
	Bytes     uint64 // their bytes
	Sent      uint64 // datagrams sent
	SentBytes uint64 // their bytes

	// UnverifiedBytes are the bytes of every datagram that found no
	// session, and UnverifiedSent the bytes sent in answer to them
	// (cookies, and the Reply and Disconnect of a handshake refused before
	// its session opened). UnverifiedSent ≤ UnverifiedBytes always.
	UnverifiedBytes, UnverifiedSent uint64

	Handshakes     uint64 // Handshake datagrams that found no session
	Cookies        uint64 // Cookie datagrams sent
	CookiesLimited uint64 // cookies not sent: HandshakeRate was spent
	BadCookies     uint64 // handshakes whose cookie was forged, replayed from another source, or expired
	ShortHandshake uint64 // handshakes under wire.MinHandshake bytes, dropped unanswered
	Opened         uint64 // sessions opened (by a valid cookie)
	Refused        uint64 // valid-cookie handshakes refused: MaxConns sessions open, or shutting down
	Retransmits    uint64 // handshakes for an open session, answered with its Hello's Reply again
	UnknownSession uint64 // Data datagrams naming no session from their source, dropped unanswered
	Garbage        uint64 // datagrams that are no datagram of the protocol and name no session
	Sessions       uint64 // sessions in the table now
}

// udpCounters are UDPStats' live counters.
type udpCounters struct {
	datagrams, bytes, sent, sentBytes             atomic.Uint64
	unverifiedBytes, unverifiedSent               atomic.Uint64
	handshakes, cookies, cookiesLimited           atomic.Uint64
	badCookies, shortHandshake, opened, refused   atomic.Uint64
	retransmits, unknownSession, garbage, inTable atomic.Uint64
}

// UDPSessionOverhead is ConnOverhead for a UDP session: its writer's
// goroutine stack (there is no reader of its own: the listener's one
// reader serves every session), the conn record and its gate session, the
// session table's entry and the net.Conn the writer writes through, as an
// upper bound in bytes.
const UDPSessionOverhead = 16 << 10

// UDPSessionMemoryBound returns the most memory one UDP session holds, in
// bytes, with this configuration: two write buffers of WriteBuffer plus a
// Disconnect frame each, the staged frames (at most WriteBuffer), the
// writer's datagram (a frame and its header) and UDPSessionOverhead. A
// source without a session holds nothing: the handshake is stateless
// until a valid cookie comes back.
func (s *Server) UDPSessionMemoryBound() int {
	return 2*(s.cfg.WriteBuffer+wire.DisconnectSize) + s.cfg.WriteBuffer + wire.DatagramHeaderSize + s.maxFrame + UDPSessionOverhead
}

// udpKey is a session's key: the connection id its client chose, and its
// source address.
type udpKey struct {
	conn uint64
	src  netip.AddrPort
}

// udpSession is one entry of the session table, touched only by the
// listener's reader.
type udpSession struct {
	c    *conn
	nc   *udpConn
	last int64 // when its latest datagram arrived
}

// udpListener is the server's UDP front: one socket, one reader goroutine
// that serves every session (a conn's "reader" fields are its), and a
// writer goroutine per session (conn.writeLoop, writing through a
// udpConn). Fields marked "reader" are touched only by the reader.
type udpListener struct {
	s    *Server
	pc   *net.UDPConn
	addr netip.AddrPort

	mac      hash.Hash        // reader: HMAC-SHA256 keyed with a secret drawn at Start
	macIn    [8 + 16 + 2]byte // reader: the MAC's input (a field: on the stack it would escape through the hash's Write)
	sum      []byte           // reader: the MAC's output
	bucketNs int64            // a cookie's time bucket: half of CookieLifetime
	cookies  *atomicbucket.Limit
	cookieW  atomic.Uint64 // reader: HandshakeRate's bucket

	sessions map[udpKey]*udpSession // reader
	buf      []byte                 // reader: the datagram being read
	out      []byte                 // reader: a datagram it sends itself
	sweepNs  int64                  // how often the reader sweeps the table

	stopping atomic.Bool // no session is opened and no cookie sent; the reader ends once the table is empty

	// Sessions whose writer has finished (runWriter), for the reader to
	// finish at once rather than at its next sweep; endWake says ended
	// holds some the reader has not taken.
	endMu   sync.Mutex
	ended   []udpEnded // endMu
	endWake atomic.Bool
	st      udpCounters
}

// listenUDP binds the UDP address, if one is configured (nil, nil
// otherwise), and checks that it is loopback like Start does.
func (s *Server) listenUDP() (*net.UDPConn, error) {
	if s.cfg.UDP.Addr == "" {
		return nil, nil
	}
	ua, err := net.ResolveUDPAddr("udp", s.cfg.UDP.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen udp: %w", err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("server: listen udp: %w", err)
	}
	ap := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	if !s.cfg.AllowNonLoopback && !ap.Addr().Unmap().IsLoopback() {
		pc.Close()
		return nil, &ConfigError{Field: "UDP.Addr", Msg: fmt.Sprintf("%q listens on %v, not a loopback address", s.cfg.UDP.Addr, ap), Err: ErrNonLoopback}
	}
	if s.cfg.UDP.ReadBuffer > 0 {
		pc.SetReadBuffer(s.cfg.UDP.ReadBuffer) // best effort: the kernel caps it
	}
	return pc, nil
}

// closeUDPConn closes pc unless it is nil.
func closeUDPConn(pc *net.UDPConn) {
	if pc != nil {
		pc.Close()
	}
}

// startUDPLocked starts the UDP reader on pc (nil: nothing to do). Called
// by Start with s.mu held, so that the goroutine is counted before a
// Shutdown can wait for it.
func (s *Server) startUDPLocked(pc *net.UDPConn) {
	if pc == nil {
		return
	}
	l := s.newUDPListener(pc)
	s.udp = l
	s.wg.Add(1)
	go l.run()
}

// newUDPListener returns the listener of pc, its reader not started.
func (s *Server) newUDPListener(pc *net.UDPConn) *udpListener {
	var secret [32]byte
	rand.Read(secret[:]) // never fails (crypto/rand panics rather than return an error)
	now := atomicbucket.Nanotime()
	lim, err := atomicbucket.NewLimit(s.cfg.UDP.HandshakeRate, max(1, s.cfg.UDP.HandshakeRate), now)
	if err != nil { // normalize checked the rate
		panic(err)
	}
	l := &udpListener{
		s:        s,
		pc:       pc,
		addr:     pc.LocalAddr().(*net.UDPAddr).AddrPort(),
		mac:      hmac.New(sha256.New, secret[:]),
		sum:      make([]byte, 0, sha256.Size),
		bucketNs: int64(s.cfg.UDP.CookieLifetime / 2),
		cookies:  lim,
		sessions: make(map[udpKey]*udpSession),
		// One byte more than the largest datagram served, so that a
		// larger one is seen to be truncated.
		buf:     make([]byte, wire.DatagramHeaderSize+s.maxFrame+1),
		out:     make([]byte, 0, wire.MinHandshake),
		sweepNs: int64(min(max(s.cfg.IdleTimeout/8, 5*time.Millisecond), time.Second)),
	}
	l.cookieW.Store(lim.FullWord(now))
	return l
}

// UDPAddr returns the address the UDP listener is bound to, or the zero
// AddrPort when there is none (or before Start).
func (s *Server) UDPAddr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.udp == nil {
		return netip.AddrPort{}
	}
	return s.udp.addr
}

// UDPStats returns a snapshot of the UDP listener's counters (zero when
// there is none).
func (s *Server) UDPStats() UDPStats {
	s.mu.Lock()
	l := s.udp
	s.mu.Unlock()
	if l == nil {
		return UDPStats{}
	}
	c := &l.st
	return UDPStats{
		Datagrams: c.datagrams.Load(), Bytes: c.bytes.Load(), Sent: c.sent.Load(), SentBytes: c.sentBytes.Load(),
		UnverifiedBytes: c.unverifiedBytes.Load(), UnverifiedSent: c.unverifiedSent.Load(),
		Handshakes: c.handshakes.Load(), Cookies: c.cookies.Load(), CookiesLimited: c.cookiesLimited.Load(),
		BadCookies: c.badCookies.Load(), ShortHandshake: c.shortHandshake.Load(), Opened: c.opened.Load(),
		Refused: c.refused.Load(), Retransmits: c.retransmits.Load(), UnknownSession: c.unknownSession.Load(),
		Garbage: c.garbage.Load(), Sessions: c.inTable.Load(),
	}
}

// closeUDP tells the UDP reader that the server is stopping: it opens no
// more sessions and sends no more cookies, serves the sessions open until
// shutdown ends them, and returns once the table is empty. Called by
// shutdown once stopping is set.
func (s *Server) closeUDP() {
	s.mu.Lock()
	l := s.udp
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.stopping.Store(true)
	l.pc.SetReadDeadline(aLongTimeAgo) // wake the reader to sweep at its stopping pace
}

// run is the reader: it reads every datagram, serves it, and sweeps the
// session table at least every sweepNs (idle sessions are ended, ended
// ones forgotten).
func (l *udpListener) run() {
	s := l.s
	defer s.wg.Done()
	next := atomicbucket.Nanotime() + l.sweepNs
	l.pc.SetReadDeadline(s.deadline(next))
	for {
		n, src, err := l.pc.ReadFromUDPAddrPort(l.buf)
		now := atomicbucket.Nanotime()
		if err == nil {
			l.datagram(l.buf[:n], netip.AddrPortFrom(src.Addr().Unmap(), src.Port()), now)
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			if errors.Is(err, net.ErrClosed) { // only run closes it; never
				return
			}
			time.Sleep(time.Millisecond) // an error of the socket's (none is expected): do not spin on it
		}
		woken := l.endWake.Swap(false)
		if woken {
			l.finishEnded(now)
		}
		switch {
		case err != nil && (!woken || l.stopping.Load()) || now >= next:
			if l.sweep(now) {
				l.pc.Close()
				return
			}
			every := l.sweepNs
			if l.stopping.Load() {
				every = min(every, int64(5*time.Millisecond))
			}
			next = now + every
			l.pc.SetReadDeadline(s.deadline(next))
		case woken:
			l.pc.SetReadDeadline(s.deadline(next))
		default:
			continue
		}
		if l.endWake.Load() {
			// A writer finished since the Swap, and its wake may have come
			// before the deadline just set: wake the next read.
			l.pc.SetReadDeadline(aLongTimeAgo)
		}
	}
}

// udpEnded is a session whose writer has finished: its key, and its
// udpConn, which tells it from a later session of the same key.
type udpEnded struct {
	key udpKey
	nc  *udpConn
}

// runWriter runs a session's writer and, once it has written what it had
// (the Disconnect last), hands the session to the reader, waking it, to
// be finished at once: its gate session closed and its place in MaxConns
// and the gate's per-address count given back, as a TCP connection's are
// once its writer is done, rather than at the next sweep, up to
// IdleTimeout/8 later.
func (l *udpListener) runWriter(c *conn, k udpKey, nc *udpConn) {
	defer l.s.wg.Done()
	c.writeLoop()
	l.endMu.Lock()
	l.ended = append(l.ended, udpEnded{k, nc})
	l.endMu.Unlock()
	l.endWake.Store(true)              // before the wake: the reader clears it, then rearms
	l.pc.SetReadDeadline(aLongTimeAgo) // wake the reader (an error once it has closed pc: none to wake)
}

// finishEnded finishes the sessions runWriter handed over that are still
// in the table (the sweep may have finished one first).
func (l *udpListener) finishEnded(now int64) {
	l.endMu.Lock()
	q := l.ended
	l.ended = nil
	l.endMu.Unlock()
	for _, e := range q {
		if u := l.sessions[e.key]; u != nil && u.nc == e.nc {
			l.finish(e.key, u, now)
		}
	}
}

// sweep ends the sessions idle for IdleTimeout and forgets those whose
// writer has finished, and reports whether the reader is done: the server
// is stopping and no session is left.
func (l *udpListener) sweep(now int64) (done bool) {
	idle := int64(l.s.cfg.IdleTimeout)
	for k, u := range l.sessions {
		c := u.c
		if c.closing.Load() {
			select {
			case <-c.writerDone:
				l.finish(k, u, now)
			default:
			}
			continue
		}
		if now-u.last >= idle {
			c.disconnect(causeTimeout, true)
		}
	}
	return l.stopping.Load() && len(l.sessions) == 0
}

// finish forgets an ended session whose writer is done: conn.finish, on
// the reader.
func (l *udpListener) finish(k udpKey, u *udpSession, now int64) {
	c := u.c
	c.nc.Close()
	if c.h != 0 {
		l.s.gate.Close(c.h, now)
	}
	delete(l.sessions, k)
	l.st.inTable.Add(^uint64(0))
	l.s.removeConn(c)
}

// datagram serves one datagram from src.
func (l *udpListener) datagram(d []byte, src netip.AddrPort, now int64) {
	l.st.datagrams.Add(1)
	l.st.bytes.Add(uint64(len(d)))
	k, id, rest, err := wire.ParseDatagram(d)
	if len(d) >= wire.DatagramHeaderSize {
		if u := l.sessions[udpKey{id, src}]; u != nil {
			l.sessionDatagram(u, k, rest, err, len(d), now)
			return
		}
	}
	l.st.unverifiedBytes.Add(uint64(len(d)))
	switch {
	case err != nil:
		l.st.garbage.Add(1)
	case k == wire.DatagramHandshake:
		l.handshake(id, rest, len(d), src, now)
	case k == wire.DatagramData:
		l.st.unknownSession.Add(1)
	default: // a Cookie datagram: the server's own kind, which no client sends
		l.st.garbage.Add(1)
	}
}

// handshake answers a Handshake datagram of n bytes that found no
// session: a cookie when it has no valid one, else the session it opens.
// Nothing it sends is larger than n (the amplification guarantee; see
// sendUnverified).
func (l *udpListener) handshake(id uint64, rest []byte, n int, src netip.AddrPort, now int64) {
	l.st.handshakes.Add(1)
	if n < wire.MinHandshake {
		l.st.shortHandshake.Add(1)
		return
	}
	cookie, hello, err := wire.ParseHandshake(rest, l.s.maxFrame)
	if err != nil {
		l.st.garbage.Add(1)
		return
	}
	if len(cookie) == 0 || !l.validCookie(cookie, src, now) {
		if len(cookie) != 0 {
			l.st.badCookies.Add(1)
		}
		if l.stopping.Load() {
			return
		}
		if !l.cookies.TakeAt(&l.cookieW, now, 1).OK() {
			l.st.cookiesLimited.Add(1)
			return
		}
		var ck [wire.CookieSize]byte
		l.mintCookie(&ck, src, now/l.bucketNs)
		if l.sendUnverified(wire.AppendCookieDatagram(l.out[:0], id, &ck), src, n) {
			l.st.cookies.Add(1)
		}
		return
	}
	l.open(udpKey{id, src}, hello, n, now)
}

// sendUnverified sends datagram b to src, which has no session, in answer
// to a datagram of n bytes, and reports whether it did: a datagram larger
// than n is never sent (none is: wire.MinHandshake leaves room for every
// answer; this check keeps it so).
func (l *udpListener) sendUnverified(b []byte, src netip.AddrPort, n int) bool {
	if len(b) > n {
		return false
	}
	if _, err := l.pc.WriteToUDPAddrPort(b, src); err != nil {
		return false
	}
	l.st.sent.Add(1)
	l.st.sentBytes.Add(uint64(len(b)))
	l.st.unverifiedSent.Add(uint64(len(b)))
	return true
}

// mintCookie writes the cookie of src for time bucket b: the first
// CookieSize bytes of HMAC-SHA256(secret, b | address | port).
func (l *udpListener) mintCookie(ck *[wire.CookieSize]byte, src netip.AddrPort, b int64) {
	in := &l.macIn
	binary.BigEndian.PutUint64(in[:], uint64(b))
	a := src.Addr().As16()
	copy(in[8:], a[:])
	binary.BigEndian.PutUint16(in[24:], src.Port())
	l.mac.Reset()
	l.mac.Write(in[:])
	l.sum = l.mac.Sum(l.sum[:0])
	copy(ck[:], l.sum)
}

// validCookie reports whether cookie is src's for the current time
// bucket or the one before it, compared in constant time.
func (l *udpListener) validCookie(cookie []byte, src netip.AddrPort, now int64) bool {
	b := now / l.bucketNs
	var ck [wire.CookieSize]byte
	for _, bb := range [2]int64{b, b - 1} {
		l.mintCookie(&ck, src, bb)
		if hmac.Equal(ck[:], cookie) {
			return true
		}
	}
	return false
}

// open opens the session of a handshake whose cookie is valid, and
// serves its Hello frame as the session's first datagram of n bytes.
func (l *udpListener) open(k udpKey, hello []byte, n int, now int64) {
	s := l.s
	s.accepted.Add(1)
	s.mu.Lock()
	if s.stopping || l.stopping.Load() || s.open.Load() >= uint64(s.cfg.MaxConns) {
		s.mu.Unlock()
		s.refused.Add(1)
		l.st.refused.Add(1)
		var b [wire.DatagramHeaderSize + wire.DisconnectSize]byte
		out := wire.AppendDisconnect(wire.AppendDatagramHeader(b[:0], wire.DatagramData, k.conn), uint8(core.TableFull))
		l.sendUnverified(out, k.src, n)
		return
	}
	nc := &udpConn{l: l, key: k, remote: net.UDPAddrFromAddrPort(k.src)}
	c := s.newConn(nc)
	s.conns[c] = struct{}{}
	s.wg.Add(2) // its writer, and the hand-over after it (runWriter)
	open := s.open.Add(1)
	s.mu.Unlock()
	for p := s.peak.Load(); open > p && !s.peak.CompareAndSwap(p, open); p = s.peak.Load() {
	}
	u := &udpSession{c: c, nc: nc, last: now}
	l.sessions[k] = u
	l.st.inTable.Add(1)
	l.st.opened.Add(1)
	go l.runWriter(c, k, nc)
	if s.pingLim != nil {
		c.pingWord.Store(s.pingLim.FullWord(now))
	}
	if !c.openSession(nc.remote, now) {
		c.t.st.bytes.Add(uint64(n))
		return
	}
	l.serve(u, hello, true, n, now)
}

// sessionDatagram serves a datagram of n bytes (kind k, rest after its
// header; err from wire.ParseDatagram) from an open session's source.
func (l *udpListener) sessionDatagram(u *udpSession, k wire.DatagramKind, rest []byte, err error, n int, now int64) {
	c := u.c
	if c.closing.Load() {
		c.t.st.bytes.Add(uint64(n))
		return
	}
	u.last = now
	u.nc.verified.Store(true)
	switch {
	case err == nil && k == wire.DatagramData:
		l.serve(u, rest, true, n, now)
	case err == nil && k == wire.DatagramHandshake && c.authed.Load():
		// The client did not hear its Hello's Reply: say it again (the
		// datagram is charged like any other first).
		if _, _, herr := wire.ParseHandshake(rest, l.s.maxFrame); herr == nil {
			l.st.retransmits.Add(1)
			l.serveRetransmit(u, n, now)
			return
		}
		l.serve(u, rest, false, n, now)
	default:
		l.serve(u, rest, false, n, now)
	}
}

// charge puts a datagram of n bytes through the session's byte budget
// (its minimum charge included) and returns the verdict; stop says the
// gate ended the session.
func (l *udpListener) charge(c *conn, n int, now int64) (v core.Verdict, stop bool) {
	s := l.s
	if s.noLimits {
		return v, false
	}
	v = s.gate.Read(c.h, uint32(n), now)
	if v.Reason != core.None {
		c.noteStage(v.Stage)
	}
	if v.Action == core.Disconnect {
		c.t.st.bytes.Add(uint64(n))
		c.t.flush()
		c.disconnect(cause(v.Reason), true)
		return v, true
	}
	return v, false
}

// serve handles one datagram of n bytes of an open session whose payload
// is frame: exactly one frame of the reference protocol when ok, else
// malformed (a datagram of a kind or layout a session may not send). A
// client's Disconnect frame ends its session (as a TCP client's close
// does).
func (l *udpListener) serve(u *udpSession, frame []byte, ok bool, n int, now int64) {
	c, s := u.c, l.s
	v, stop := l.charge(c, n, now)
	if stop {
		return
	}
	t, m := &c.t, &c.m
	err := decodeWhole(frame, ok, s.maxFrame, m)
	if err != nil {
		if n > wire.DatagramHeaderSize+s.maxFrame {
			m.Size = s.maxFrame + 1 // truncated by the read: larger than any frame served, which the gate says is Oversize
		}
	} else if m.Type == wire.TypeDisconnect {
		c.endRead(n)
		c.disconnect(causePeerClosed, false)
		return
	}
	t.frames++
	t.row = s.rowOf(m, err)
	if v.Action != core.Accept {
		t.drop(v.Reason) // the byte budget refused the datagram
	} else {
		c.frame(m, err, now)
	}
	c.endRead(n)
	c.t.st.readNanos.Add(atomicbucket.Nanotime() - now)
}

// serveRetransmit answers a handshake resent to an open, authenticated
// session with its Hello's Reply again, counted as a frame on the hello
// row, once the datagram has passed the byte budget.
func (l *udpListener) serveRetransmit(u *udpSession, n int, now int64) {
	c, s := u.c, l.s
	v, stop := l.charge(c, n, now)
	if stop {
		return
	}
	c.t.frames++
	c.t.row = s.rowHello
	if v.Action != core.Accept {
		c.t.drop(v.Reason)
	} else {
		c.t.accept()
		c.reply(0, wire.StatusOK, 0, 0)
	}
	c.endRead(n)
}

// udpConn is a UDP session's net.Conn, for its writer: Write sends each
// frame of the reference protocol it is given as one Data datagram to the
// session's source. Reads and deadlines are the listener's (no-ops here).
// Only the writer calls Write.
type udpConn struct {
	l      *udpListener
	key    udpKey
	remote *net.UDPAddr
	// verified is set once the session's client has sent a datagram
	// after its opening handshake: until then what is sent to it (the
	// Hello's Reply, a Disconnect) counts in UDPStats.UnverifiedSent.
	verified atomic.Bool
	buf      []byte // the writer's datagram
	closed   atomic.Bool
}

// errUDPClosed is Write's error once the session is closed.
var errUDPClosed = errors.New("server: udp session closed")

func (u *udpConn) Write(b []byte) (int, error) {
	if u.closed.Load() {
		return 0, errUDPClosed
	}
	l := u.l
	for off := 0; off < len(b); {
		size, err := wire.Peek(b[off:], math.MaxInt32)
		if err != nil || size > len(b)-off { // never: the conn queues whole frames
			size = len(b) - off
		}
		d := wire.AppendDatagramHeader(u.buf[:0], wire.DatagramData, u.key.conn)
		d = append(d, b[off:off+size]...)
		u.buf = d
		if _, err := l.pc.WriteToUDPAddrPort(d, u.key.src); err != nil {
			return off, err
		}
		l.st.sent.Add(1)
		l.st.sentBytes.Add(uint64(len(d)))
		if !u.verified.Load() {
			l.st.unverifiedSent.Add(uint64(len(d)))
		}
		off += size
	}
	return len(b), nil
}

func (u *udpConn) Read([]byte) (int, error) {
	return 0, errors.New("server: a udp session is read by its listener")
}
func (u *udpConn) Close() error                     { u.closed.Store(true); return nil }
func (u *udpConn) LocalAddr() net.Addr              { return u.l.pc.LocalAddr() }
func (u *udpConn) RemoteAddr() net.Addr             { return u.remote }
func (u *udpConn) SetDeadline(time.Time) error      { return nil }
func (u *udpConn) SetReadDeadline(time.Time) error  { return nil }
func (u *udpConn) SetWriteDeadline(time.Time) error { return nil }
