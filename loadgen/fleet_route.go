package loadgen

import (
	"fmt"
	"time"
)

// The game server an Action dials in a fleet run (Action.Server): the
// client's current server (ServerAssigned, the zero value: its assignment,
// client index mod the servers, until it moves), the next one after its
// current (ServerNext), or one by number (ServerIndex). With one server
// every value dials it.
const (
	ServerAssigned uint8 = 0
	ServerNext     uint8 = 255
)

// MaxServers is the most game servers a run may have: what Action.Server
// can name by number.
const MaxServers = 254

// ServerIndex is the Action.Server value that dials server i (0-based,
// i < MaxServers).
func ServerIndex(i int) uint8 { return uint8(i + 1) }

// ServerCounts is what one game server of a run admitted: per population,
// the frames of the kinds clients send as inputs and requests (move,
// ability, chat, purchase) that its gate accepted, in the measured window
// (after the warm-up), and per Series interval over the whole run. The
// fleet-wide count is the sum over the servers.
type ServerCounts struct {
	Name     string
	Admitted []int64   // by population
	Series   [][]int64 // [population][interval]
}

// serverRoute says which game server each connection of a worker's
// clients is on: clients start on their assignment (Client.Index mod n)
// and move when an action names another server. The zero value is not
// usable; one worker uses it.
type serverRoute struct {
	n   int
	cur []uint8 // by worker client index: the server the client is on
}

func newServerRoute(n int, clients []Client) serverRoute {
	r := serverRoute{n: n, cur: make([]uint8, len(clients))}
	for i, c := range clients {
		r.cur[i] = uint8(c.Index % n)
	}
	return r
}

// pick returns the server client's new connection goes to, by choice (an
// Action.Server), and makes it the client's current one.
func (r *serverRoute) pick(client int32, choice uint8) (int, error) {
	if client < 0 || int(client) >= len(r.cur) {
		return 0, fmt.Errorf("loadgen: client %d is not in the run", client)
	}
	cur := int(r.cur[client])
	switch choice {
	case ServerAssigned:
	case ServerNext:
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

// serverDialer is a Driver to several game servers (a fleet run): the
// worker dials through it, naming the server its action chose.
type serverDialer interface {
	DialServer(conn ConnID, addr uint32, server uint8) error
}

// dial opens conn from addr on the server the action chose, on a driver
// that has several, or on the one server.
func (w *Worker) dial(conn ConnID, addr uint32, server uint8) error {
	if d, ok := w.d.(serverDialer); ok {
		return d.DialServer(conn, addr, server)
	}
	return w.d.Dial(conn, addr)
}

// ThrottleAware is a Stream that hears when the server throttles its
// client: a request rejected, or the connection ended by the server. The
// worker calls Throttled with the time it learned it, between two Next
// calls; what the stream does about it comes with its next actions.
type ThrottleAware interface {
	Throttled(at int64)
}

// throttled tells cs's stream, if it listens, of a throttle at at.
func (w *Worker) throttled(cs *clientState, at int64) {
	if t, ok := cs.stream.(ThrottleAware); ok {
		t.Throttled(at)
	}
}

// admitted is the per-server count of a fleet run (see ServerCounts).
type admitted struct {
	warmup, interval int64
	servers          []ServerCounts
}

func newAdmitted(n, pops int, warmup, interval, duration time.Duration) *admitted {
	a := &admitted{warmup: int64(warmup), interval: int64(interval)}
	points := int((duration + interval - 1) / interval)
	for i := range n {
		sc := ServerCounts{Name: fmt.Sprintf("server-%d", i), Admitted: make([]int64, pops), Series: make([][]int64, pops)}
		for p := range sc.Series {
			sc.Series[p] = make([]int64, points)
		}
		a.servers = append(a.servers, sc)
	}
	return a
}

// gameKind reports whether k is sent as an input or a request.
func gameKind(k Kind) bool { return k >= KindMove && k <= KindPurchase }

// add counts n frames of kind k of population pop that server accepted at
// at.
func (a *admitted) add(server, pop int, k Kind, at, n int64) {
	if !gameKind(k) || pop < 0 || pop >= len(a.servers[server].Admitted) {
		return
	}
	sc := &a.servers[server]
	if at >= a.warmup {
		sc.Admitted[pop] += n
	}
	s := sc.Series[pop]
	if len(s) > 0 {
		s[min(max(at/a.interval, 0), int64(len(s)-1))] += n
	}
}
