package loadgen

import (
	"net"
	"net/netip"

	"github.com/sluicedev/sluice/loadgen/internal/udpconn"
	"github.com/sluicedev/sluice/loadgen/server"
)

// dialUDP is Dial's connection over UDP for client, from src (when
// valid): a raw socket for a behaviour that writes its own datagrams, else
// a udpconn.Conn, which carries what the behaviour writes one frame per
// datagram and runs the cookie handshake around its Hello (see
// docs/transports.md).
func (l *Loopback) dialUDP(client int32, src netip.Addr) (net.Conn, error) {
	if int(client) < len(l.udpRaw) && l.udpRaw[client] {
		return l.dialUDPRaw(src)
	}
	ap, err := netip.ParseAddrPort(l.server)
	if err != nil {
		return nil, err
	}
	return udpconn.Dial(l.ctx, ap, src)
}

// udpListen is the in-process server's UDP listener for transport t: a
// free loopback port for TransportUDP, none otherwise.
func udpListen(t string) server.UDPConfig {
	if t != TransportUDP {
		return server.UDPConfig{}
	}
	return server.UDPConfig{Addr: "127.0.0.1:0"}
}
