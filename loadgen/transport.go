package loadgen

import (
	"fmt"
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
)

// Transports lists the transport names, for help text and errors.
var Transports = []string{TransportTCP, TransportWS}

// CheckTransport refuses a transport name that is not one of Transports
// ("" is TCP).
func CheckTransport(t string) error {
	switch t {
	case "", TransportTCP, TransportWS:
		return nil
	}
	return fmt.Errorf("%q is not a transport (have %s, %s)", t, TransportTCP, TransportWS)
}

// dialWS is Dial's connection over WebSocket: an upgrade to ws://server/
// from src (when valid), each whole frame the client writes then sent as
// one binary message.
func (l *Loopback) dialWS(src netip.Addr) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(l.server)
	if err != nil {
		return nil, err
	}
	return wsraw.Dial(l.ctx, ap, src, l.timeout)
}

// wsListen is the in-process server's WebSocket listener for transport t:
// a free loopback port for TransportWS, none otherwise.
func wsListen(t string) server.WSConfig {
	if t != TransportWS {
		return server.WSConfig{}
	}
	return server.WSConfig{Addr: "127.0.0.1:0"}
}
