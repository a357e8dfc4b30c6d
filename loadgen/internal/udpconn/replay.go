package udpconn

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// DialReplay opens a Raw for a cookie-replay attacker: a socket from src
// (any local address when not valid) to the server at srv, whose Read
// keeps the cookies the server sends it (Raw.Cookie), and a second
// socket, the replay socket, from the same local address on a port of its
// own. Write sends a Handshake datagram that carries a cookie from the
// replay socket, its cookie replaced by the last one the first socket
// received: a cookie obtained honestly, replayed from another port.
// While the first socket has received no cookie the replay is not sent
// (counted Unarmed): an attacker with nothing to replay sends nothing, and
// a zero cookie would prove only that the server refuses a forgery, which
// the server's own tests prove. Every
// other datagram goes out from the first socket, as Raw's do. What the
// server sends the replay socket is read and counted by a goroutine of
// its own, which Close ends (see ReplayStats).
func DialReplay(ctx context.Context, srv netip.AddrPort, src netip.Addr) (*Raw, error) {
	r, err := DialRaw(ctx, srv, src)
	if err != nil {
		return nil, err
	}
	local := r.LocalAddr().(*net.UDPAddr).AddrPort().Addr()
	pc, err := dial(ctx, srv, local)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.replay = &replay{pc: pc, done: make(chan struct{})}
	go r.replay.read()
	return r, nil
}

// ReplayStats counts what went through a replay socket.
type ReplayStats struct {
	Replays   uint64 // handshakes sent from the replay socket, each with a cookie the first socket received
	Unarmed   uint64 // replays written before the first socket had a cookie: not sent
	SentBytes uint64 // the bytes of the replays
	Received  uint64 // datagrams the server sent the replay socket
	RecvBytes uint64 // their bytes
	Cookies   uint64 // of them, Cookie datagrams
}

// ReplayStats returns the replay socket's counts (zero on a Raw that
// DialReplay did not make). The replay socket's port is ReplayAddr's.
func (r *Raw) ReplayStats() ReplayStats {
	if r.replay == nil {
		return ReplayStats{}
	}
	p := r.replay
	return ReplayStats{
		Replays: p.replays.Load(), Unarmed: p.unarmed.Load(), SentBytes: p.sentBytes.Load(),
		Received: p.received.Load(), RecvBytes: p.recvBytes.Load(), Cookies: p.cookies.Load(),
	}
}

// ReplayAddr returns the replay socket's local address (the zero AddrPort
// on a Raw that DialReplay did not make).
func (r *Raw) ReplayAddr() netip.AddrPort {
	if r.replay == nil {
		return netip.AddrPort{}
	}
	return r.replay.pc.LocalAddr().(*net.UDPAddr).AddrPort()
}

// replay is a Raw's replay socket. out is Write's alone; the counters
// are read by anyone.
type replay struct {
	pc        *net.UDPConn
	out       []byte
	done      chan struct{} // closed when read returns
	closeOnce sync.Once

	replays, unarmed, sentBytes  atomic.Uint64
	received, recvBytes, cookies atomic.Uint64
}

// carriesCookie reports whether p is a Handshake datagram with a cookie.
func carriesCookie(p []byte) bool {
	k, _, rest, err := wire.ParseDatagram(p)
	return err == nil && k == wire.DatagramHandshake && len(rest) >= 1+wire.CookieSize && rest[0] == wire.CookieSize
}

// send replays handshake hs (which carriesCookie) from the replay socket
// with r's last cookie, or counts it unarmed when r has none yet (its
// first cookie still on the way: under load it can take longer than the
// behaviour's Every).
func (p *replay) send(hs []byte, r *Raw) {
	ck, n := r.Cookie()
	if n == 0 {
		p.unarmed.Add(1)
		return
	}
	b := append(p.out[:0], hs...)
	p.out = b
	copy(b[wire.DatagramHeaderSize+1:], ck[:])
	if _, err := p.pc.Write(b); err != nil {
		return // a datagram the socket refuses is lost, as the network loses it, and not counted sent
	}
	p.replays.Add(1)
	p.sentBytes.Add(uint64(len(b)))
}

// read counts the replay socket's datagrams until it is closed.
func (p *replay) read() {
	defer close(p.done)
	buf := make([]byte, 2048)
	for {
		n, err := p.pc.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a refused send reported by the kernel (ICMP): one error per datagram, not a loop
		}
		p.received.Add(1)
		p.recvBytes.Add(uint64(n))
		if k, _, _, err := wire.ParseDatagram(buf[:n]); err == nil && k == wire.DatagramCookie {
			p.cookies.Add(1)
		}
	}
}

// close closes the replay socket and waits for its reader; safe to call
// more than once, from any goroutine.
func (p *replay) close() {
	p.closeOnce.Do(func() { p.pc.Close() })
	<-p.done
}
