package loadgen

import (
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/server"
)

// transportOf is the transport population pop's clients speak: its own
// (behave.Population.Transport), else the run's, with "" named tcp.
func (s RunSpec) transportOf(pop int) string {
	t := s.Transport
	if pop >= 0 && pop < len(s.Plan.Populations) && s.Plan.Populations[pop].Transport != "" {
		t = s.Plan.Populations[pop].Transport
	}
	if t == "" {
		return drive.TransportTCP
	}
	return t
}

// uses reports whether some population's clients speak transport t.
func (s RunSpec) uses(t string) bool {
	for i := range s.Plan.Populations {
		if s.transportOf(i) == t {
			return true
		}
	}
	return false
}

// popTransports is every population's transport (transportOf), indexed
// as the plan's populations.
func (s RunSpec) popTransports() []string {
	out := make([]string, len(s.Plan.Populations))
	for i := range out {
		out[i] = s.transportOf(i)
	}
	return out
}

// clientTransports is, for each client of a worker, its population's
// transport.
func (s RunSpec) clientTransports(clients []behave.Client) []string {
	out := make([]string, len(clients))
	for i := range clients {
		out[i] = s.transportOf(clients[i].Population)
	}
	return out
}

// checkPopTransports refuses a population's transport that is not one
// of drive.Transports, and, against a Remote (one address), populations
// that do not all speak one transport.
func checkPopTransports(s RunSpec) error {
	for i, p := range s.Plan.Populations {
		if err := drive.CheckTransport(p.Transport); err != nil {
			return &behave.ParamError{Owner: "population " + p.Name, Field: "Transport", Value: p.Transport, Reason: err.Error()}
		}
		if s.Remote != nil && s.transportOf(i) != s.transportOf(0) {
			return &behave.ParamError{Owner: "population " + p.Name, Field: "Transport", Value: s.transportOf(i), Reason: "differs from population " + s.Plan.Populations[0].Name + "'s " + s.transportOf(0) + ": a remote server is one address, of one transport"}
		}
	}
	return nil
}

// checkWSBehaviours refuses a population whose behaviour writes
// WebSocket frames of its own over another transport than ws.
func checkWSBehaviours(s RunSpec) error {
	for i, p := range s.Plan.Populations {
		if raw, _ := behave.WSOnly(p.Behaviour); raw && s.transportOf(i) != drive.TransportWS {
			return &behave.ParamError{Owner: "population " + p.Name, Field: "Behaviour", Value: p.Behaviour.Name(), Reason: "writes WebSocket frames: it runs over transport ws only"}
		}
	}
	return checkUDPBehaviours(s)
}

// wsListen is the in-process server's WebSocket listener: a free
// loopback port when some population speaks ws, none otherwise.
func wsListen(s RunSpec) server.WSConfig {
	if !s.uses(drive.TransportWS) {
		return server.WSConfig{}
	}
	return server.WSConfig{Addr: "127.0.0.1:0"}
}

// checkSimBehaviours refuses, in a sim run, a population whose behaviour
// writes WebSocket frames of its own: the sim models the messages of the
// reference protocol over WebSocket, not hand-made frames.
func checkSimBehaviours(s RunSpec) error {
	for _, p := range s.Plan.Populations {
		if raw, _ := behave.WSOnly(p.Behaviour); raw {
			return &behave.ParamError{Owner: "population " + p.Name, Field: "Behaviour", Value: p.Behaviour.Name(), Reason: "writes WebSocket frames of its own: it runs on the loopback driver only"}
		}
	}
	return checkSimUDPBehaviours(s)
}

// checkUDPBehaviours refuses a network model that is not valid or with
// no population over udp (Network.Check; the model applies to the udp
// populations only), and a population whose behaviour writes UDP
// datagrams of its own over another transport than udp.
func checkUDPBehaviours(s RunSpec) error {
	t := drive.TransportTCP
	if s.uses(drive.TransportUDP) {
		t = drive.TransportUDP
	}
	if err := s.Network.Check(t); err != nil {
		return err
	}
	for i, p := range s.Plan.Populations {
		if behave.UDPOnly(p.Behaviour) && s.transportOf(i) != drive.TransportUDP {
			return &behave.ParamError{Owner: "population " + p.Name, Field: "Behaviour", Value: p.Behaviour.Name(), Reason: "writes UDP datagrams: it runs over transport udp only"}
		}
	}
	return nil
}

// checkSimUDPBehaviours refuses, in a sim run, a population whose
// behaviour writes UDP datagrams of its own: the sim models sessions, not
// what reaches none.
func checkSimUDPBehaviours(s RunSpec) error {
	for _, p := range s.Plan.Populations {
		if behave.UDPOnly(p.Behaviour) {
			return &behave.ParamError{Owner: "population " + p.Name, Field: "Behaviour", Value: p.Behaviour.Name(), Reason: "writes UDP datagrams of its own: it runs on the loopback driver only"}
		}
	}
	return nil
}

// udpListen is the in-process server's UDP listener: a free loopback
// port when some population speaks udp, none otherwise.
func udpListen(s RunSpec) server.UDPConfig {
	if !s.uses(drive.TransportUDP) {
		return server.UDPConfig{}
	}
	return server.UDPConfig{Addr: "127.0.0.1:0"}
}
