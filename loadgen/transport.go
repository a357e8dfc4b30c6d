package loadgen

import (
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/sluicedev/sluice/loadgen/internal/wsraw"
	"github.com/sluicedev/sluice/loadgen/server"
)

// The transports a loopback run's clients speak (RunSpec.Transport): the
// reference protocol's frames over TCP, or over WebSocket, one binary
// message per frame (see docs/transports.md).
const (
	TransportTCP = "tcp"
	TransportWS  = "ws"
	TransportUDP = "udp" // transport_udp.go
)

// Transports lists the transport names, for help text and errors.
var Transports = []string{TransportTCP, TransportWS, TransportUDP}

// CheckTransport refuses a transport name that is not one of Transports
// ("" is TCP).
func CheckTransport(t string) error {
	switch t {
	case "", TransportTCP, TransportWS, TransportUDP:
		return nil
	}
	return fmt.Errorf("%q is not a transport (have %s, %s, %s)", t, TransportTCP, TransportWS, TransportUDP)
}

// How the loopback driver dials a client over WebSocket (Loopback.wsRaw).
const (
	wsDialHonest    uint8 = iota // a gorilla/websocket client: each whole frame written is one message
	wsDialUpgraded               // a plain socket, upgraded: the behaviour writes WebSocket frames itself
	wsDialNoUpgrade              // a plain socket: the behaviour writes the upgrade itself
)

// wsDialModes returns, for each client of a worker, how it is dialled.
func wsDialModes(clients []Client) []uint8 {
	out := make([]uint8, len(clients))
	for i := range clients {
		if raw, up := wsOnly(clients[i].Behaviour); raw {
			out[i] = wsDialNoUpgrade
			if up {
				out[i] = wsDialUpgraded
			}
		}
	}
	return out
}

// dialWS is Dial's connection over WebSocket for client, from src (when
// valid), and the reader of the server's frames when it is not the
// connection itself.
func (l *Loopback) dialWS(client int32, src netip.Addr) (net.Conn, io.Reader, error) {
	ap, err := netip.ParseAddrPort(l.server)
	if err != nil {
		return nil, nil, err
	}
	mode := wsDialHonest
	if int(client) < len(l.wsRaw) {
		mode = l.wsRaw[client]
	}
	if mode == wsDialHonest {
		c, err := wsraw.Dial(l.ctx, ap, src, l.timeout)
		return c, nil, err
	}
	d := net.Dialer{Timeout: l.timeout}
	if src.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))
	}
	nc, err := d.DialContext(l.ctx, "tcp", l.server)
	if err != nil {
		return nil, nil, err
	}
	if mode == wsDialUpgraded {
		if err := wsraw.Upgrade(nc, l.timeout); err != nil {
			nc.Close()
			return nil, nil, err
		}
		return nc, wsraw.ServerReader(nc), nil
	}
	return nc, nil, nil
}

// checkWSBehaviours refuses a population whose behaviour writes
// WebSocket frames of its own in a run over another transport.
func checkWSBehaviours(s RunSpec) error {
	if s.Transport == TransportWS {
		return checkUDPBehaviours(s)
	}
	for _, p := range s.Plan.Populations {
		if raw, _ := wsOnly(p.Behaviour); raw {
			return &ParamError{"population " + p.Name, "Behaviour", p.Behaviour.Name(), "writes WebSocket frames: it runs over transport ws only"}
		}
	}
	return checkUDPBehaviours(s)
}

// wsListen is the in-process server's WebSocket listener for transport t:
// a free loopback port for TransportWS, none otherwise.
func wsListen(t string) server.WSConfig {
	if t != TransportWS {
		return server.WSConfig{}
	}
	return server.WSConfig{Addr: "127.0.0.1:0"}
}

// checkSimBehaviours refuses, in a sim run, a population whose behaviour
// writes WebSocket frames of its own: the sim models the messages of the
// reference protocol over WebSocket, not hand-made frames.
func checkSimBehaviours(s RunSpec) error {
	for _, p := range s.Plan.Populations {
		if raw, _ := wsOnly(p.Behaviour); raw {
			return &ParamError{"population " + p.Name, "Behaviour", p.Behaviour.Name(), "writes WebSocket frames of its own: it runs on the loopback driver only"}
		}
	}
	return checkSimUDPBehaviours(s)
}
