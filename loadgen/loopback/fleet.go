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

// addr is the listener for transport t of the server client is on.
func (f *LoopFleet) addr(client int32, t string) string {
	i := f.Route.Current(client)
	switch {
	case t == drive.TransportWS && i < len(f.WSAddrs):
		return f.WSAddrs[i]
	case t == drive.TransportUDP && i < len(f.UDPAddrs):
		return f.UDPAddrs[i]
	}
	return f.Addrs[i]
}

// DialServer implements serverDialer: with one server (no fleet), Dial.
func (l *Loopback) DialServer(id drive.ConnID, addr uint32, server uint8) error {
	if l.Fleet != nil {
		if _, err := l.Fleet.Route.Pick(id.Client, server); err != nil {
			return err
		}
	}
	return l.Dial(id, addr)
}
