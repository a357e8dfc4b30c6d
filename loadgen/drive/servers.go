package drive

import (
	"fmt"

	"github.com/sluicedev/sluice/loadgen/behave"
)

// ServerRoute says which game server each connection of a worker's
// clients is on: clients start on their assignment (behave.Client.Index mod n)
// and move when an action names another server. The zero value is not
// usable; one worker uses it.
type ServerRoute struct {
	n   int
	cur []uint8 // by worker client index: the server the client is on
}

func NewServerRoute(n int, clients []behave.Client) ServerRoute {
	r := ServerRoute{n: n, cur: make([]uint8, len(clients))}
	for i, c := range clients {
		r.cur[i] = uint8(c.Index % n)
	}
	return r
}

// pick returns the server client's new connection goes to, by choice (an
// Action.Server), and makes it the client's current one.
func (r *ServerRoute) Pick(client int32, choice uint8) (int, error) {
	if client < 0 || int(client) >= len(r.cur) {
		return 0, fmt.Errorf("loadgen: client %d is not in the run", client)
	}
	cur := int(r.cur[client])
	switch choice {
	case behave.ServerAssigned:
	case behave.ServerNext:
		cur = (cur + 1) % r.n
	default:
		if int(choice) > r.n {
			return 0, fmt.Errorf("loadgen: server %d named, and the run has %d", choice-1, r.n)
		}
		cur = int(choice - 1)
	}
	r.cur[client] = uint8(cur)
	return cur, nil
}

// Current is the server client is on.
func (r *ServerRoute) Current(client int32) int { return int(r.cur[client]) }

// ServerDialer is a Driver to several game servers (a fleet run): the
// worker dials through it, naming the server its action chose.
type ServerDialer interface {
	DialServer(conn ConnID, addr uint32, server uint8) error
}

// dial opens conn from addr on the server the action chose, on a driver
// that has several, or on the one server.
func (w *Worker) dial(conn ConnID, addr uint32, server uint8) error {
	if d, ok := w.d.(ServerDialer); ok {
		return d.DialServer(conn, addr, server)
	}
	return w.d.Dial(conn, addr)
}

// throttled tells cs's stream, if it listens, of a throttle at at.
func (w *Worker) throttled(cs *clientState, at int64) {
	if t, ok := cs.stream.(behave.ThrottleAware); ok {
		t.Throttled(at)
	}
}
