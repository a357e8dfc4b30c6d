package loopback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/internal/udpconn"
	"github.com/sluicedev/sluice/loadgen/proto"
)

// ErrNotLoopback is returned by NewLoopback for a server address outside
// 127.0.0.0/8 (or ::1): the harness sends traffic to loopback addresses
// only.
var ErrNotLoopback = errors.New("loadgen: the server address is not a loopback address")

// Loopback is the loopback driver: real TCP connections from one worker to
// a server on a loopback address (loadgen/server, which RunLoopback starts
// in-process). Each connection dials from the source address of its
// client's address group, a distinct 127.x.y.z (127.0.0.0/8 all loops back
// on Linux), so the server's pre-auth limits see distinct hosts; one
// goroutine per connection reads the server's frames, stamps each with the
// run's RealTime clock as it arrives and hands it to Poll through a
// channel. Writes are made on the worker's goroutine, each bounded by the
// write timeout. Stop ends every connection and waits for every goroutine
// the driver started.
//
// Make one with NewLoopback; its methods other than Stop are called from
// the worker's goroutine only.
type Loopback struct {
	Rt      *drive.RealTime
	ctx     context.Context
	server  string
	timeout time.Duration
	events  chan drive.Event
	stop    chan struct{}
	wg      sync.WaitGroup
	conns   map[drive.ConnID]*loopConn
	stopped bool
	replays udpconn.ReplayStats // of the cookie replayers' connections closed so far (CookieReplays)
	Bind    bool                // dial from each address group's own 127.x.y.z (a loopback server)
	proto   proto.Protocol
	// Transports is, per client, the transport it dials: drive.TransportWS
	// (transport.go), drive.TransportUDP (udp.go), else TCP (a client
	// past its end too).
	Transports []string
	// WSAddr and UDPAddr are the server's WebSocket and UDP addresses;
	// unset, the driver's own (a server of one transport).
	WSAddr, UDPAddr netip.AddrPort
	WSRaw           []uint8       // over WebSocket: per client, how a behaviour writing frames of its own is dialled (wsDialMode)
	Fleet           *LoopFleet    // a run of several servers: which one each client dials (fleet.go)
	UDPRaw          []uint8       // over UDP: per client, how a behaviour writing datagrams of its own is dialled (udpDialRaw, udpDialReplay; behave/hostile_udp.go)
	Net             drive.Network // over UDP: the clients' network model (drive/network.go)
	Seeds           []uint64      // over UDP: per client, its seed, for the network model
}

type loopConn struct {
	nc        net.Conn
	r         io.Reader   // what the server's frames are read from, when not nc
	closed    atomic.Bool // closed by the worker (or Stop): no EvClosed for it
	wdeadline time.Time   // the write deadline armed on nc (worker only)
}

// loopbackEvents is the event channel's capacity: readers block (and TCP
// pushes back on the server) when the worker is this far behind.
const loopbackEvents = 4096

// NewLoopback returns a loopback driver to the server at addr, on clock rt
// (shared with the run's other workers through RealTime.Clone). Dials use
// ctx (a cancelled run stops dialling) and, like writes, time out after
// timeout.
func NewLoopback(ctx context.Context, addr netip.AddrPort, rt *drive.RealTime, timeout time.Duration) (*Loopback, error) {
	return NewSocketDriver(ctx, addr, rt, timeout, false, proto.Reference{})
}

// NewSocketDriver is NewLoopback, and with anyAddr the same driver to a
// server at any address the user named (Remote.AnyAddress), reading the
// server's frames with p. Only to a loopback server does each address
// group dial from its own 127.x.y.z: elsewhere, the host's own address is
// the only one the server can see.
func NewSocketDriver(ctx context.Context, addr netip.AddrPort, rt *drive.RealTime, timeout time.Duration, anyAddr bool, p proto.Protocol) (*Loopback, error) {
	loop := addr.Addr().Unmap().IsLoopback()
	if !loop && !anyAddr {
		return nil, fmt.Errorf("%w: %v", ErrNotLoopback, addr)
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Loopback{
		proto:   p,
		Bind:    loop,
		Rt:      rt,
		ctx:     ctx,
		server:  addr.String(),
		timeout: timeout,
		events:  make(chan drive.Event, loopbackEvents),
		stop:    make(chan struct{}),
		conns:   make(map[drive.ConnID]*loopConn),
	}, nil
}

// LoopbackAddr is the source address of address group g (g ≥ 1): a
// distinct 127.a.b.c with none of a, b, c 0 or 255, for g below 254³.
func LoopbackAddr(g uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + g/(254*254)%254), byte(1 + g/254%254), byte(1 + g%254)})
}

// Now returns the run's time.
func (l *Loopback) Now() int64 { return l.Rt.Now() }

// Dial connects conn from its group's source address and starts its
// reading goroutine.
func (l *Loopback) Dial(id drive.ConnID, addr uint32) error {
	if l.stopped {
		return net.ErrClosed
	}
	if old := l.conns[id]; old != nil {
		l.closeConn(id, old)
	}
	var src netip.Addr
	if l.Bind {
		src = LoopbackAddr(addr)
	}
	var nc net.Conn
	var err error
	var r io.Reader
	switch l.transportOf(id.Client) {
	case drive.TransportWS:
		nc, r, err = l.dialWS(id.Client, src)
	case drive.TransportUDP:
		nc, err = l.dialUDP(id, src)
	default:
		d := net.Dialer{Timeout: l.timeout}
		if src.IsValid() {
			d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))
		}
		nc, err = d.DialContext(l.ctx, "tcp", l.addrOf(id.Client, drive.TransportTCP))
	}
	if err != nil {
		return err
	}
	c := &loopConn{nc: nc, r: r}
	l.conns[id] = c
	l.wg.Add(1)
	go l.read(id, c)
	return nil
}

// transportOf is the transport client dials (Transports).
func (l *Loopback) transportOf(client int32) string {
	if client >= 0 && int(client) < len(l.Transports) {
		return l.Transports[client]
	}
	return drive.TransportTCP
}

// addrOf is the address of the server client dials over transport t: in
// a run of several servers, the client's current server's listener for t
// (Fleet); else WSAddr, UDPAddr, or the driver's own.
func (l *Loopback) addrOf(client int32, t string) string {
	if l.Fleet != nil {
		return l.Fleet.addr(client, t)
	}
	switch {
	case t == drive.TransportWS && l.WSAddr.IsValid():
		return l.WSAddr.String()
	case t == drive.TransportUDP && l.UDPAddr.IsValid():
		return l.UDPAddr.String()
	}
	return l.server
}

// read hands the server's frames on conn to Poll until the connection
// ends: after a Disconnect frame (the server closes next), at the end of
// the stream or an undecodable frame (EvClosed), or when the worker closes
// it. It closes the socket when it is done.
func (l *Loopback) read(id drive.ConnID, c *loopConn) {
	defer l.wg.Done()
	defer c.nc.Close()
	var r io.Reader = c.nc
	if c.r != nil {
		r = c.r
	}
	fr := l.proto.NewReader(r)
	var f proto.Frame
	var ev drive.Event
	for {
		err := fr.Next(&f)
		at := l.Rt.Now()
		if err != nil || !drive.EventFromFrame(id, at, &f, &ev) {
			if !c.closed.Load() {
				l.send(drive.Event{Conn: id, Kind: drive.EvClosed, At: at})
			}
			return
		}
		if !l.send(ev) || ev.Kind == drive.EvDisconnect {
			return
		}
	}
}

func (l *Loopback) send(ev drive.Event) bool {
	select {
	case l.events <- ev:
		return true
	case <-l.stop:
		return false
	}
}

// Write writes p on conn within the write timeout.
func (l *Loopback) Write(id drive.ConnID, p []byte) error {
	c := l.conns[id]
	if c == nil {
		return net.ErrClosed
	}
	// The deadline is armed 1.5 timeouts ahead and re-armed once less
	// than one is left, so a write always gets the timeout and a busy
	// connection updates its timer once per half timeout, not per write.
	if now := time.Now(); c.wdeadline.Sub(now) < l.timeout {
		c.wdeadline = now.Add(l.timeout + l.timeout/2)
		c.nc.SetWriteDeadline(c.wdeadline)
	}
	_, err := c.nc.Write(p)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		// A write the socket fails other than by the write timeout is on
		// a connection the server (or the network) ended, perhaps before
		// the reader read the Disconnect that came first. The bytes are
		// lost without an error, as bytes written after a peer's close
		// are, and as the sim loses them: the worker learns of the end
		// from the reader's event, with its reason (the reader sends one
		// for every connection the worker did not close itself). A write
		// that timed out is the worker's to handle.
		return nil
	}
	return err
}

// Close closes conn; its reading goroutine ends.
func (l *Loopback) Close(id drive.ConnID) error {
	if c := l.conns[id]; c != nil {
		l.closeConn(id, c)
	}
	return nil
}

// CloseWrite shuts down conn's sending side (shutdown(SHUT_WR)); its
// reading goroutine goes on delivering what the server sends until the
// server closes.
func (l *Loopback) CloseWrite(id drive.ConnID) error {
	c := l.conns[id]
	if c == nil {
		return drive.ErrConnClosed
	}
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		return drive.ErrConnClosed
	}
	return tc.CloseWrite()
}

func (l *Loopback) closeConn(id drive.ConnID, c *loopConn) {
	delete(l.conns, id)
	c.closed.Store(true)
	if r, ok := c.nc.(*udpconn.Raw); ok {
		st := r.ReplayStats() // final: the replays are sent by the worker, which closes
		l.replays.Replays += st.Replays
		l.replays.Unarmed += st.Unarmed
	}
	c.nc.Close()
}

// CookieReplays returns what the replay sockets of the connections the
// driver has closed sent (udpconn.ReplayStats): for a run's result, once
// the driver is stopped. The worker's goroutine only.
func (l *Loopback) CookieReplays() udpconn.ReplayStats { return l.replays }

// Poll waits for the next event until Now() ≥ until, or ctx ends (see
// RealTime.Poll).
func (l *Loopback) Poll(ctx context.Context, until int64, ev *drive.Event) (bool, error) {
	return l.Rt.Poll(ctx, l.events, until, ev)
}

// Stop closes every connection still open and waits for every reading
// goroutine to end, and for the wake timer's; a later Poll sleeps on Go's
// timers alone. Call it once the worker is done (from its goroutine,
// or after it).
func (l *Loopback) Stop() {
	if l.stopped {
		return
	}
	l.stopped = true
	for id, c := range l.conns {
		l.closeConn(id, c)
	}
	close(l.stop)
	l.wg.Wait()
	l.Rt.Close()
}
