// Package udpconn is the load generator's client side of the UDP
// transport (see the wire package's "Datagrams"): a net.Conn that carries
// the reference protocol's byte stream one frame per datagram, so that
// behaviours written for a stream run over UDP unchanged. It runs the
// cookie handshake itself, around the first Hello the behaviour writes,
// and resends it while no answer comes.
package udpconn

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// Handshake resending: a handshake unanswered for Retransmit is sent
// again, at most Attempts times in all; then Read fails (the session was
// never opened).
const (
	Retransmit = 250 * time.Millisecond
	Attempts   = 8
)

// maxQueued bounds the bytes written while the handshake is under way,
// sent once it completes; what does not fit is dropped (as a full send
// buffer would make a stream's writer wait, a datagram's is lost).
const maxQueued = 64 << 10

// Conn is one client session over UDP. Write takes whole frames of the
// reference protocol (several per call, as on a stream; bytes that are not
// a whole frame go in one datagram of their own). The first frame, if it is
// a Hello, opens the session: it is sent in a Handshake, the server's
// Cookie is answered with the Handshake again carrying it, and frames
// written meanwhile wait until the server's first Data datagram arrives. A
// first frame that is no Hello opens nothing: it and what follows go out as
// Data datagrams that no session receives. Read returns the frames of the
// server's Data datagrams as a stream. Close sends a Disconnect frame (the
// server ends the session as a peer close) and closes the socket.
//
// Read is called from one goroutine and Write from another; Close from
// any. The zero value is not usable: make one with Dial.
type Conn struct {
	// Fate, when set before the first Write, decides each Data datagram's
	// fate as the client sends it: lost, or delayed by the duration (0: on
	// time). Handshakes and the Disconnect of Close are not subject to it.
	Fate func() (lost bool, delay time.Duration)

	pc   *net.UDPConn
	id   uint64
	srv  netip.AddrPort
	late []*time.Timer // delayed datagrams' timers, stopped by Close

	mu        sync.Mutex
	state     uint8 // stateNone, stateHandshake, stateOpen
	hello     []byte
	cookie    []byte
	queued    []byte
	out       []byte // Write's datagram
	attempts  int
	sentAt    time.Time
	rdeadline time.Time
	closed    bool

	rbuf    []byte // Read's datagram
	pending []byte // frame bytes Read has not returned yet
}

const (
	stateNone uint8 = iota
	stateHandshake
	stateOpen
)

// Dial opens a UDP socket from src (any local address when not valid) to
// the server at srv. No datagram is sent until the first Write.
func Dial(ctx context.Context, srv netip.AddrPort, src netip.Addr) (*Conn, error) {
	pc, err := dial(ctx, srv, src)
	if err != nil {
		return nil, err
	}
	return &Conn{pc: pc, id: rand.Uint64() | 1, srv: srv, rbuf: make([]byte, 2048)}, nil
}

// dial opens a UDP socket from src (any local address when not valid),
// connected to srv.
func dial(ctx context.Context, srv netip.AddrPort, src netip.Addr) (*net.UDPConn, error) {
	var laddr *net.UDPAddr
	if src.IsValid() {
		laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0))
	}
	d := net.Dialer{LocalAddr: laddr}
	nc, err := d.DialContext(ctx, "udp", srv.String())
	if err != nil {
		return nil, err
	}
	return nc.(*net.UDPConn), nil
}

// ID returns the connection id the session is keyed by (with the source
// address).
func (c *Conn) ID() uint64 { return c.id }

// frameSize is the size of the whole frame that starts p, or len(p) when p
// does not start with one.
func frameSize(p []byte) int {
	size, err := wire.Peek(p, math.MaxInt32)
	if err != nil || size > len(p) {
		return len(p)
	}
	return size
}

func isHello(f []byte) bool {
	return len(f) > wire.LenSize && wire.Type(f[wire.LenSize]) == wire.TypeHello
}

// Write sends p's frames.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	for off := 0; off < len(p); {
		size := frameSize(p[off:])
		f := p[off : off+size]
		off += size
		switch {
		case c.state == stateNone && isHello(f):
			c.hello = append([]byte(nil), f...)
			c.state = stateHandshake
			c.sendHandshakeLocked()
		case c.state == stateHandshake:
			if len(c.queued)+len(f) <= maxQueued {
				c.queued = append(c.queued, f...)
			}
		default:
			c.sendDataLocked(f)
		}
	}
	return len(p), nil
}

// sendHandshakeLocked sends the Handshake: the Hello as written, behind
// the cookie when there is one, padded to wire.MinHandshake.
func (c *Conn) sendHandshakeLocked() {
	b := wire.AppendDatagramHeader(c.out[:0], wire.DatagramHandshake, c.id)
	b = append(b, byte(len(c.cookie)))
	b = append(b, c.cookie...)
	b = append(b, c.hello...)
	for len(b) < wire.MinHandshake {
		b = append(b, 0)
	}
	c.out = b
	c.attempts++
	c.sentAt = time.Now()
	c.pc.Write(b) // a lost handshake is resent; an error here is one
}

func (c *Conn) sendDataLocked(f []byte) {
	b := wire.AppendDatagramHeader(c.out[:0], wire.DatagramData, c.id)
	c.out = append(b, f...)
	if c.Fate != nil {
		lost, delay := c.Fate()
		if lost {
			return
		}
		if delay > 0 {
			d := append([]byte(nil), c.out...)
			c.late = append(c.late, time.AfterFunc(delay, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				if !c.closed {
					c.pc.Write(d)
				}
			}))
			return
		}
	}
	c.pc.Write(c.out) // UDP: a datagram the socket refuses is lost, as the network loses it
}

// Read returns the server's frames.
func (c *Conn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if err := c.readDatagram(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// errNoSession: the handshake was resent Attempts times unanswered.
var errNoSession = errors.New("udpconn: the server did not answer the handshake")

// readDatagram reads one datagram and acts on it: a Cookie answers the
// handshake, the first Data datagram opens the session (the frames
// written meanwhile go out), and a Data datagram's frame becomes pending.
// While the handshake is under way it wakes every Retransmit to resend
// it.
func (c *Conn) readDatagram() error {
	c.mu.Lock()
	dl, hs := c.rdeadline, c.state == stateHandshake
	if hs {
		if c.attempts >= Attempts && time.Since(c.sentAt) >= Retransmit {
			c.mu.Unlock()
			return errNoSession
		}
		if r := c.sentAt.Add(Retransmit); dl.IsZero() || r.Before(dl) {
			dl = r
		}
	}
	c.mu.Unlock()
	c.pc.SetReadDeadline(dl)
	n, err := c.pc.Read(c.rbuf)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.mu.Lock()
			resend := c.state == stateHandshake && time.Since(c.sentAt) >= Retransmit && c.attempts < Attempts && !c.closed
			if resend {
				c.sendHandshakeLocked()
			}
			user := c.rdeadline
			c.mu.Unlock()
			if !user.IsZero() && !time.Now().Before(user) {
				return err
			}
			return nil
		}
		return err
	}
	k, id, rest, err := wire.ParseDatagram(c.rbuf[:n])
	if err != nil || id != c.id {
		return nil // not the server's answer to this session: ignored
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch k {
	case wire.DatagramCookie:
		if c.state == stateHandshake {
			c.cookie = append(c.cookie[:0], rest...)
			c.attempts = 0
			c.sendHandshakeLocked()
		}
	case wire.DatagramData:
		if c.state == stateHandshake {
			c.state = stateOpen
			q := c.queued
			c.queued = nil
			for off := 0; off < len(q); {
				size := frameSize(q[off:])
				c.sendDataLocked(q[off : off+size])
				off += size
			}
		}
		c.pending = rest
	}
	return nil
}

// Close sends a Disconnect frame when the session is open, and closes
// the socket.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for _, t := range c.late {
		t.Stop()
	}
	if c.state == stateOpen {
		var b [wire.DatagramHeaderSize + wire.DisconnectSize]byte
		c.pc.Write(wire.AppendDisconnect(wire.AppendDatagramHeader(b[:0], wire.DatagramData, c.id), 0))
	}
	return c.pc.Close()
}

func (c *Conn) LocalAddr() net.Addr  { return c.pc.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr { return c.pc.RemoteAddr() }

func (c *Conn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdeadline = t
	c.mu.Unlock()
	return nil
}

func (c *Conn) SetWriteDeadline(t time.Time) error { return c.pc.SetWriteDeadline(t) }

// Raw is a plain UDP socket for behaviours that write datagrams of their
// own: each Write is one datagram, as it is. Read returns the frames of
// the Data datagrams the server sends it (none, as a rule: it has no
// session) and drops every other datagram, keeping the last Cookie
// datagram's cookie (see Cookie). A Raw made by DialReplay has a second
// socket, which the handshakes that carry a cookie go out from (see
// DialReplay). Read is called from one goroutine and Write from another;
// Close and Cookie from any. The zero value is not usable: make one with
// DialRaw or DialReplay.
type Raw struct {
	*net.UDPConn
	buf     []byte
	pending []byte
	replay  *replay // nil but for DialReplay

	mu      sync.Mutex
	cookie  [wire.CookieSize]byte // the last cookie the server sent this socket
	cookies uint64                // how many it has sent
}

// DialRaw opens a UDP socket from src (any local address when not valid)
// to the server at srv.
func DialRaw(ctx context.Context, srv netip.AddrPort, src netip.Addr) (*Raw, error) {
	pc, err := dial(ctx, srv, src)
	if err != nil {
		return nil, err
	}
	return &Raw{UDPConn: pc, buf: make([]byte, 2048)}, nil
}

// Write sends p as one datagram; a datagram the socket refuses is lost,
// as the network loses it. On a Raw made by DialReplay, a Handshake
// datagram that carries a cookie is replayed instead (see DialReplay).
func (r *Raw) Write(p []byte) (int, error) {
	if r.replay != nil && carriesCookie(p) {
		r.replay.send(p, r)
		return len(p), nil
	}
	r.UDPConn.Write(p)
	return len(p), nil
}

// Cookie returns the last cookie the server sent this socket, and how
// many Cookie datagrams it has sent it (0: none, and the cookie is
// zeros).
func (r *Raw) Cookie() (ck [wire.CookieSize]byte, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cookie, r.cookies
}

// Close closes the socket and, on a Raw made by DialReplay, the replay
// socket, once its reader has ended.
func (r *Raw) Close() error {
	err := r.UDPConn.Close()
	if r.replay != nil {
		r.replay.close()
	}
	return err
}

// Read returns the frames of the server's Data datagrams.
func (r *Raw) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		n, err := r.UDPConn.Read(r.buf)
		if err != nil {
			return 0, err
		}
		switch k, _, rest, err := wire.ParseDatagram(r.buf[:n]); {
		case err != nil:
		case k == wire.DatagramData:
			r.pending = rest
		case k == wire.DatagramCookie:
			r.mu.Lock()
			copy(r.cookie[:], rest)
			r.cookies++
			r.mu.Unlock()
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}
