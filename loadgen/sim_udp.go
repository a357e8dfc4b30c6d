package loadgen

import (
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

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
// drops them unseen). The server charges each datagram, header included,
// as one read, and handles its frame with it; a datagram that is not
// exactly one frame is malformed, one larger than the maximum frame is
// checked at the maximum frame plus one (Oversize, without ending the
// session unless the gate does), and a Disconnect frame ends the session
// as a peer close, as server.udpListener does.
func (s *Sim) receiveUDP(c *simConn, p []byte, now int64) {
	for off := 0; off < len(p) && c.open; {
		size := wsMessageSize(p[off:])
		msg := p[off : off+size]
		off += size
		n := wire.DatagramHeaderSize + size
		if !c.hello {
			if len(msg) <= wire.LenSize || wire.Type(msg[wire.LenSize]) != wire.TypeHello {
				continue // no session yet: dropped unseen
			}
			n = udpHandshakeSize(size)
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
			continue
		}
		s.frame(c, m, err, now)
	}
}
