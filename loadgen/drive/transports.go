package drive

import "fmt"

// The transports a loopback run's clients speak (RunSpec.Transport): the
// reference protocol's frames over TCP, over WebSocket, one binary
// message per frame, or over UDP, one frame per datagram (see docs/transports.md).
const (
	TransportTCP = "tcp"
	TransportWS  = "ws"
	TransportUDP = "udp" // one frame per datagram, after a cookie handshake (loadgen/server/udp.go)
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
