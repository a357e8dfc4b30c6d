package loopback

import "github.com/sluicedev/sluice/loadgen/drive"

// LoopFleet routes a worker's connections over the servers: Addrs,
// WSAddrs and UDPAddrs are each server's TCP, WebSocket and UDP
// listeners, by server index (the last two only where the run speaks
// that transport).
type LoopFleet struct {
	Addrs, WSAddrs, UDPAddrs []string
	Route                    drive.ServerRoute
}

// addr is the listener for transport t of the server client is on, or ""
// (an address no dial parses, so that the dial says so) when the servers
// do not listen for t: a client must not fall back to another transport's
// listener, where over UDP every session would go unanswered.
func (f *LoopFleet) addr(client int32, t string) string {
	i := f.Route.Current(client)
	var addrs []string
	switch t {
	case drive.TransportWS:
		addrs = f.WSAddrs
	case drive.TransportUDP:
		addrs = f.UDPAddrs
	default:
		addrs = f.Addrs
	}
	if i >= len(addrs) {
		return ""
	}
	return addrs[i]
}

// DialServer implements drive.ServerDialer: with one server (no fleet), Dial.
func (l *Loopback) DialServer(id drive.ConnID, addr uint32, server uint8) error {
	if l.Fleet != nil {
		if _, err := l.Fleet.Route.Pick(id.Client, server); err != nil {
			return err
		}
	}
	return l.Dial(id, addr)
}
