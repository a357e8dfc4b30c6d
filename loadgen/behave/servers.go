package behave

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

// ThrottleAware is a Stream that hears when the server throttles its
// client: a request rejected, or the connection ended by the server. The
// worker calls Throttled with the time it learned it, between two Next
// calls; what the stream does about it comes with its next actions.
type ThrottleAware interface {
	Throttled(at int64)
}
