package sim

import (
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// simUDP is the sim's state for transport udp: the clients' seeds (for
// their network models) and the datagrams the model delays, in the order
// they arrive (the delay is the same for all, so the order they were
// sent in).
type simUDP struct {
	seeds []uint64
	late  []udpLate
	head  int
	clock int64 // when the listener read its latest datagram (readAt)
}

// readAt is when the server's UDP listener reads a datagram that arrives
// at now: at now, but never at or before the datagram it read last. Its
// one reader reads each datagram with a system call of its own and times
// it, so no two are read at the same instant, those of one write included
// (over a stream a write is one read, at one time). The nanosecond
// matters where a count falls on a boundary: four ByteLimit drops read at
// one instant add exactly the strike ladder's disconnect score, and the
// fourth ends the session; read one after the other, the score has
// drained by the time between them, and a fifth drop ends it, as over
// sockets (lag-storm's flushes over udp: 52 ByteLimit moves against 70
// over loopback, one more for each of the 18 sessions the budget ended).
func (u *simUDP) readAt(now int64) int64 {
	u.clock = max(u.clock+1, now)
	return u.clock
}

// udpLate is a datagram the network model delayed: it reaches the server
// at at.
type udpLate struct {
	c   *simConn
	msg []byte
	at  int64
}

// next returns when the first delayed datagram arrives.
func (u *simUDP) next() (int64, bool) {
	if u.head < len(u.late) {
		return u.late[u.head].at, true
	}
	return 0, false
}

// deliverLate hands the server every delayed datagram due by t.
func (s *Sim) deliverLate(t int64) {
	u := &s.udp
	for u.head < len(u.late) && s.adjust(u.late[u.head].at) <= t {
		d := u.late[u.head]
		u.late[u.head] = udpLate{}
		u.head++
		if d.c.open {
			s.udpDatagram(d.c, d.msg, u.readAt(t))
		}
	}
	if u.head == len(u.late) {
		u.late, u.head = u.late[:0], 0
	}
}

// udpHandshakeSize is the size of the Handshake datagram that opens a
// session with Hello frame hello: the header, the cookie and the Hello,
// padded to wire.MinHandshake (the datagram the server opens the session
// on, after the cookie exchange, which is charged to no session).
func udpHandshakeSize(hello int) int {
	return max(wire.MinHandshake, wire.DatagramHeaderSize+1+wire.CookieSize+hello)
}

// receiveUDP reads p, one client write, as the server reads it over UDP
// (transport udp): the client sent each whole frame in p as one datagram,
// and a rest that is not a whole frame as one datagram of its own
// (udpconn.Conn.Write). The first Hello goes in the Handshake that opens
// the session; frames written before it reach no session (the server
// drops them unseen). Every other datagram meets the network model first
// (lost, delayed, or on time: SimConfig.Network), as udpconn.Conn's do.
func (s *Sim) receiveUDP(c *simConn, p []byte, now int64) {
	if c.net == nil && s.cfg.Network.On() && int(c.id.Client) < len(s.udp.seeds) {
		c.net = drive.NewNetModel(s.cfg.Network, s.udp.seeds[c.id.Client], c.id.Gen)
	}
	for off := 0; off < len(p) && c.open; {
		size := wsMessageSize(p[off:])
		msg := p[off : off+size]
		off += size
		if !c.hello && len(msg) > wire.LenSize && wire.Type(msg[wire.LenSize]) == wire.TypeHello {
			s.udpDatagram(c, msg, s.udp.readAt(now)) // the handshake
			continue
		}
		lost, delay := c.net.Fate()
		switch {
		case lost:
		case delay > 0:
			s.udp.late = append(s.udp.late, udpLate{c: c, msg: append([]byte(nil), msg...), at: now + delay})
		default:
			s.udpDatagram(c, msg, s.udp.readAt(now))
		}
	}
}

// udpDatagram is the server's handling of one datagram carrying msg: a
// session's first, its Handshake, must carry a Hello (else it reaches no
// session); each is charged, header included, as one read and its frame
// handled with it; a datagram that is not exactly one frame is malformed,
// one larger than the maximum frame is checked at the maximum frame plus
// one (Oversize, without ending the session unless the gate does), and a
// Disconnect frame ends the session as a peer close, as
// server.udpListener does.
func (s *Sim) udpDatagram(c *simConn, msg []byte, now int64) {
	n := wire.DatagramHeaderSize + len(msg)
	if !c.hello {
		if len(msg) <= wire.LenSize || wire.Type(msg[wire.LenSize]) != wire.TypeHello {
			return // no session yet: dropped unseen
		}
		n = udpHandshakeSize(len(msg))
	}
	v := s.gate.Read(c.h, uint32(n), now)
	if v.Action == core.Disconnect {
		s.disconnect(c, v.Reason, now)
		return
	}
	c.lastFrame, c.partialSince = now, 0
	m := &s.msg
	k, err := wire.Decode(msg, s.maxFrame, m)
	if err == nil && k != len(msg) || err == wire.ErrIncomplete || err == wire.ErrOversize {
		err = wire.ErrMalformed // not exactly one frame
	}
	if err != nil {
		m.Size = min(len(msg), s.maxFrame+1)
	} else if m.Type == wire.TypeDisconnect {
		s.shut(c, now) // the server sends nothing: over UDP the client hears of no close
		return
	}
	s.frames++
	if v.Action != core.Accept {
		s.decide(c, s.kindOf(m, err), v.Reason, now)
		return
	}
	s.frame(c, m, err, now)
}
