package drive

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
)

// Network is a seeded model of what the network does to the clients'
// datagrams over transport udp (RunSpec.Network, a scenario's network):
// each Data datagram a client sends is lost with probability Loss, else
// delayed by ReorderDelay with probability Reorder (so datagrams sent
// after it overtake it). The draws come from the client's seed and its
// connection's generation, one per datagram in the order the client
// sends them, so a run is reproducible and the sim and the loopback driver
// see the same fate for the same datagram. Handshakes are not subject to
// it (the load generator resends a lost handshake on the loopback driver,
// which the sim does not model), nor the Disconnect a client sends as it
// closes, nor what the server sends. The zero value is a perfect network.
type Network struct {
	// Loss is the probability that a datagram is lost, in [0, 1).
	Loss float64 `yaml:"loss,omitempty" json:"loss,omitempty"`
	// Reorder is the probability that a datagram that is not lost is
	// delayed by ReorderDelay, in [0, 1 − Loss].
	Reorder float64 `yaml:"reorder,omitempty" json:"reorder,omitempty"`
	// ReorderDelay is how late a reordered datagram arrives; default 20ms
	// when Reorder is set, at most 10s.
	ReorderDelay time.Duration `yaml:"reorderDelay,omitempty" json:"reorderDelay,omitempty"`
}

// DefaultReorderDelay is Network.ReorderDelay's default.
const DefaultReorderDelay = 20 * time.Millisecond

// On reports whether the model does anything.
func (n Network) On() bool { return n.Loss > 0 || n.Reorder > 0 }

func (n Network) delay() int64 {
	if n.ReorderDelay == 0 {
		return int64(DefaultReorderDelay)
	}
	return int64(n.ReorderDelay)
}

// Check refuses probabilities out of range, a delay out of range, and a
// model on a transport that is not udp.
func (n Network) Check(transport string) error {
	bad := func(field string, v any, msg string) error {
		return &behave.ParamError{Owner: "run", Field: "Network." + field, Value: v, Reason: msg}
	}
	switch {
	case math.IsNaN(n.Loss) || n.Loss < 0 || n.Loss >= 1:
		return bad("Loss", n.Loss, "must be in [0, 1)")
	case math.IsNaN(n.Reorder) || n.Reorder < 0 || n.Loss+n.Reorder > 1:
		return bad("Reorder", n.Reorder, fmt.Sprintf("must be in [0, %v] (1 − loss)", 1-n.Loss))
	case n.ReorderDelay < 0 || n.ReorderDelay > 10*time.Second:
		return bad("ReorderDelay", n.ReorderDelay, "must be in [0, 10s]")
	case n.On() && transport != TransportUDP:
		return bad("Loss", n.Loss, "models datagrams: it applies over transport udp only")
	}
	return nil
}

// subNetwork is the sub-seed of a client's network draws, far from the
// behaviours' own (honest.go): a connection of generation g draws from
// behave.SubSeed(seed, subNetwork+g).
const subNetwork = 1 << 20

// NetModel draws the fate of one connection's datagrams. A nil *NetModel
// is a perfect network.
type NetModel struct {
	n     Network
	delay int64
	r     *behave.Rand
}

func NewNetModel(n Network, clientSeed uint64, gen uint32) *NetModel {
	if !n.On() {
		return nil
	}
	return &NetModel{n: n, delay: n.delay(), r: behave.NewRand(behave.SubSeed(clientSeed, subNetwork+int(gen)))}
}

// Fate draws the next datagram's: lost, or delayed by delay ns (0: on
// time).
func (m *NetModel) Fate() (lost bool, delay int64) {
	if m == nil {
		return false, 0
	}
	u := m.r.Float64()
	switch {
	case u < m.n.Loss:
		return true, 0
	case u < m.n.Loss+m.n.Reorder:
		return false, m.delay
	}
	return false, 0
}

// ClientSeeds returns each client's seed.
func ClientSeeds(clients []behave.Client) []uint64 {
	out := make([]uint64, len(clients))
	for i, c := range clients {
		out[i] = c.Seed
	}
	return out
}
