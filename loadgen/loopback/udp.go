package loopback

import (
	"net"
	"net/netip"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/internal/udpconn"
)

// dialUDP is Dial's connection over UDP for client, from src (when
// valid): a raw socket for a behaviour that writes its own datagrams, else
// a udpconn.Conn, its datagrams' fate drawn from the network model, which
// carries what the behaviour writes one frame per datagram and runs the
// cookie handshake around its Hello (see docs/transports.md).
func (l *Loopback) dialUDP(id drive.ConnID, src netip.Addr) (net.Conn, error) {
	if int(id.Client) < len(l.UDPRaw) && l.UDPRaw[id.Client] != udpDialSession {
		return l.dialUDPRaw(id.Client, src, l.UDPRaw[id.Client])
	}
	ap, err := netip.ParseAddrPort(l.addrOf(id.Client, drive.TransportUDP))
	if err != nil {
		return nil, err
	}
	c, err := udpconn.Dial(l.ctx, ap, src)
	if err != nil {
		return nil, err
	}
	if l.Net.On() && int(id.Client) < len(l.Seeds) {
		m := drive.NewNetModel(l.Net, l.Seeds[id.Client], id.Gen)
		c.Fate = func() (bool, time.Duration) {
			lost, d := m.Fate()
			return lost, time.Duration(d)
		}
	}
	return c, nil
}

// How the loopback driver dials a client over UDP (Loopback.UDPRaw).
const (
	udpDialSession uint8 = iota // a udpconn.Conn: a session, opened by the cookie handshake
	udpDialRaw                  // a udpconn.Raw: the behaviour writes datagrams of its own
	udpDialReplay               // a udpconn.Raw with a replay socket (udpconn.DialReplay): a cookie replayer's
)

// dialUDPRaw is Dial's raw UDP socket for client, whose behaviour writes
// its own datagrams, with a replay socket in mode udpDialReplay.
func (l *Loopback) dialUDPRaw(client int32, src netip.Addr, mode uint8) (*udpconn.Raw, error) {
	ap, err := netip.ParseAddrPort(l.addrOf(client, drive.TransportUDP))
	if err != nil {
		return nil, err
	}
	if mode == udpDialReplay {
		return udpconn.DialReplay(l.ctx, ap, src)
	}
	return udpconn.DialRaw(l.ctx, ap, src)
}

// UDPRawModes returns, for each client of a worker, how it is dialled
// over UDP: a session, a raw socket, or a raw socket with a replay
// socket.
func UDPRawModes(clients []behave.Client) []uint8 {
	out := make([]uint8, len(clients))
	for i := range clients {
		switch b := clients[i].Behaviour; {
		case behave.UDPReplaysCookies(b):
			out[i] = udpDialReplay
		case behave.UDPOnly(b):
			out[i] = udpDialRaw
		}
	}
	return out
}
