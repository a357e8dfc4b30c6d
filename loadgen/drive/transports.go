package drive

import "fmt"

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
