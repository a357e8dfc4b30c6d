package loopback

import "github.com/sluicedev/sluice/loadgen/drive"

// LoopFleet routes a worker's connections over the servers.
type LoopFleet struct {
	Addrs []string
	Route drive.ServerRoute
}

// target is the address conn's client is to dial.
func (l *Loopback) target(id drive.ConnID) string {
	if l.Fleet == nil {
		return l.server
	}
	return l.Fleet.Addrs[l.Fleet.Route.Current(id.Client)]
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
