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
// a udpconn.Conn, its datagrams' fate drawn from the network model, which carries what the behaviour writes one frame per
// datagram and runs the cookie handshake around its Hello (see
// docs/transports.md).
func (l *Loopback) dialUDP(id drive.ConnID, src netip.Addr) (net.Conn, error) {
	if int(id.Client) < len(l.UDPRaw) && l.UDPRaw[id.Client] {
		return l.dialUDPRaw(src)
	}
	ap, err := netip.ParseAddrPort(l.addrOf(drive.TransportUDP))
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

// dialUDPRaw is Dial's raw UDP socket for a behaviour that writes its own
// datagrams.
func (l *Loopback) dialUDPRaw(src netip.Addr) (*udpconn.Raw, error) {
	ap, err := netip.ParseAddrPort(l.addrOf(drive.TransportUDP))
	if err != nil {
		return nil, err
	}
	return udpconn.DialRaw(l.ctx, ap, src)
}

// UDPRawModes returns, for each client of a worker, whether it is dialled
// a raw UDP socket.
func UDPRawModes(clients []behave.Client) []bool {
	out := make([]bool, len(clients))
	for i := range clients {
		out[i] = behave.UDPOnly(clients[i].Behaviour)
	}
	return out
}
