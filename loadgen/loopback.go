package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
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
	rt      *RealTime
	ctx     context.Context
	server  string
	timeout time.Duration
	events  chan Event
	stop    chan struct{}
	wg      sync.WaitGroup
	conns   map[ConnID]*loopConn
	stopped bool
	wake    *wakeTimer // made by the first Poll that sleeps
	noWake  bool       // no wakeTimer to be had: Go's timers alone
}

type loopConn struct {
	nc        net.Conn
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
func NewLoopback(ctx context.Context, addr netip.AddrPort, rt *RealTime, timeout time.Duration) (*Loopback, error) {
	if !addr.Addr().Unmap().IsLoopback() {
		return nil, fmt.Errorf("%w: %v", ErrNotLoopback, addr)
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Loopback{
		rt:      rt,
		ctx:     ctx,
		server:  addr.String(),
		timeout: timeout,
		events:  make(chan Event, loopbackEvents),
		stop:    make(chan struct{}),
		conns:   make(map[ConnID]*loopConn),
	}, nil
}

// LoopbackAddr is the source address of address group g (g ≥ 1): a
// distinct 127.a.b.c with none of a, b, c 0 or 255, for g below 254³.
func LoopbackAddr(g uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + g/(254*254)%254), byte(1 + g/254%254), byte(1 + g%254)})
}

// Now returns the run's time.
func (l *Loopback) Now() int64 { return l.rt.Now() }

// Dial connects conn from its group's source address and starts its
// reading goroutine.
func (l *Loopback) Dial(id ConnID, addr uint32) error {
	if l.stopped {
		return net.ErrClosed
	}
	if old := l.conns[id]; old != nil {
		l.closeConn(id, old)
	}
	d := net.Dialer{
		LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(LoopbackAddr(addr), 0)),
		Timeout:   l.timeout,
	}
	nc, err := d.DialContext(l.ctx, "tcp", l.server)
	if err != nil {
		return err
	}
	c := &loopConn{nc: nc}
	l.conns[id] = c
	l.wg.Add(1)
	go l.read(id, c)
	return nil
}

// read hands the server's frames on conn to Poll until the connection
// ends: after a Disconnect frame (the server closes next), at the end of
// the stream or an undecodable frame (EvClosed), or when the worker closes
// it. It closes the socket when it is done.
func (l *Loopback) read(id ConnID, c *loopConn) {
	defer l.wg.Done()
	defer c.nc.Close()
	fr, err := wire.NewFramer(c.nc, wire.DefaultMaxFrame, 0)
	if err != nil { // the sizes are constants
		panic(err)
	}
	var m wire.Msg
	var ev Event
	for {
		err := fr.ReadMsg(&m)
		at := l.rt.Now()
		if err != nil || !EventFromMsg(id, at, &m, &ev) {
			if !c.closed.Load() {
				l.send(Event{Conn: id, Kind: EvClosed, At: at})
			}
			return
		}
		if !l.send(ev) || ev.Kind == EvDisconnect {
			return
		}
	}
}

func (l *Loopback) send(ev Event) bool {
	select {
	case l.events <- ev:
		return true
	case <-l.stop:
		return false
	}
}

// Write writes p on conn within the write timeout.
func (l *Loopback) Write(id ConnID, p []byte) error {
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
func (l *Loopback) Close(id ConnID) error {
	if c := l.conns[id]; c != nil {
		l.closeConn(id, c)
	}
	return nil
}

func (l *Loopback) closeConn(id ConnID, c *loopConn) {
	delete(l.conns, id)
	c.closed.Store(true)
	c.nc.Close()
}

// spinBelow is the shortest wait Poll sleeps for. A shorter one spins,
// yielding to every runnable goroutine between two looks at the clock: at
// tens of thousands of sends per second a worker's waits are tens of
// microseconds, no longer than arming a timer and being woken through the
// netpoller take.
const spinBelow = 50 * time.Microsecond

// Poll waits for the next event until Now() ≥ until, or ctx ends.
//
// A wait of spinBelow or more sleeps on two timers and ends at the first
// to fire: a wakeTimer and Go's own. With the process idle, a Go timer
// fires up to a millisecond late, because the runtime then sleeps in
// epoll_wait, whose timeout is in whole milliseconds; every send after
// such a wake-up is late by as much, which the run records as send lag
// and adds to every response time measured from the intended send. The
// wakeTimer's timerfd ends that epoll_wait when it expires. With every P
// busy, the runtime polls the network seldom and the timerfd can be the
// late one, while Go's timer, checked at each scheduling pass, fires on
// time. Where there is no wakeTimer (not Linux, or timerfd_create failed),
// Go's timer alone is used.
func (l *Loopback) Poll(ctx context.Context, until int64, ev *Event) (bool, error) {
	var d time.Duration
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case e := <-l.events:
			*ev = e
			return true, nil
		default:
		}
		if d = time.Duration(until - l.rt.Now()); d <= 0 {
			return false, ctx.Err()
		}
		if d >= spinBelow {
			break
		}
		runtime.Gosched() // spin: a wait under spinBelow
	}
	wake := l.wakeTimer()
	if wake != nil && wake.Reset(d) != nil {
		l.dropWake() // not seen on an open timerfd; Go's timer still works
		wake = nil
	}
	if wake == nil {
		return l.rt.Poll(ctx, l.events, until, ev)
	}
	// Since Go 1.23 a Reset timer never delivers a stale value, and it
	// never fires early: d was measured before the Reset.
	l.rt.timer.Reset(d)
	defer l.rt.timer.Stop()
	for {
		select {
		case e := <-l.events:
			*ev = e
			return true, nil
		case <-l.rt.timer.C:
			return false, nil
		case <-wake.C:
			// Perhaps the signal of an earlier expiry that this Reset
			// overtook: the clock says whether until has come.
			if l.rt.Now() >= until {
				return false, nil
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// wakeTimer returns the driver's wakeTimer, made on first use; nil if it
// has none (none on this system, making one failed, or Stop was called).
// A precise wake-up is a refinement, so a failure falls back to Go's
// timers rather than ending the run.
func (l *Loopback) wakeTimer() *wakeTimer {
	if l.wake == nil && !l.noWake && !l.stopped {
		w, err := newWakeTimer()
		if err != nil || w == nil {
			l.noWake = true
			return nil
		}
		l.wake = w
	}
	return l.wake
}

// dropWake closes the wakeTimer, for good.
func (l *Loopback) dropWake() {
	if l.wake != nil {
		l.wake.Close()
		l.wake = nil
	}
	l.noWake = true
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
	l.dropWake()
}
