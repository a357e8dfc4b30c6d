package loadgen

import (
	"net"
	"net/netip"
	"time"

	"github.com/sluicedev/sluice/loadgen/internal/udpconn"
	"github.com/sluicedev/sluice/loadgen/server"
)

// dialUDP is Dial's connection over UDP for client, from src (when
// valid): a raw socket for a behaviour that writes its own datagrams, else
// a udpconn.Conn, its datagrams' fate drawn from the network model, which carries what the behaviour writes one frame per
// datagram and runs the cookie handshake around its Hello (see
// docs/transports.md).
func (l *Loopback) dialUDP(id ConnID, src netip.Addr) (net.Conn, error) {
	if int(id.Client) < len(l.udpRaw) && l.udpRaw[id.Client] {
		return l.dialUDPRaw(src)
	}
	ap, err := netip.ParseAddrPort(l.server)
	if err != nil {
		return nil, err
	}
	c, err := udpconn.Dial(l.ctx, ap, src)
	if err != nil {
		return nil, err
	}
	if l.net.On() && int(id.Client) < len(l.seeds) {
		m := newNetModel(l.net, l.seeds[id.Client], id.Gen)
		c.Fate = func() (bool, time.Duration) {
			lost, d := m.fate()
			return lost, time.Duration(d)
		}
	}
	return c, nil
}

// udpListen is the in-process server's UDP listener for transport t: a
// free loopback port for TransportUDP, none otherwise.
func udpListen(t string) server.UDPConfig {
	if t != TransportUDP {
		return server.UDPConfig{}
	}
	return server.UDPConfig{Addr: "127.0.0.1:0"}
}
