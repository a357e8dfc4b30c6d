package loadgen

import (
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/server"
)

// checkWSBehaviours refuses a population whose behaviour writes
// WebSocket frames of its own in a run over another transport.
func checkWSBehaviours(s RunSpec) error {
	if s.Transport == drive.TransportWS {
		return checkUDPBehaviours(s)
	}
	for _, p := range s.Plan.Populations {
		if raw, _ := behave.WSOnly(p.Behaviour); raw {
			return &behave.ParamError{Owner: "population " + p.Name, Field: "Behaviour", Value: p.Behaviour.Name(), Reason: "writes WebSocket frames: it runs over transport ws only"}
		}
	}
	return checkUDPBehaviours(s)
}

// wsListen is the in-process server's WebSocket listener for transport t:
// a free loopback port for TransportWS, none otherwise.
func wsListen(t string) server.WSConfig {
	if t != drive.TransportWS {
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

// checkUDPBehaviours refuses a network model that is not valid or not
// over udp (Network.check), and a population whose behaviour writes UDP
// datagrams of its own in a run over another transport.
func checkUDPBehaviours(s RunSpec) error {
	if err := s.Network.Check(s.Transport); err != nil {
		return err
	}
	if s.Transport == drive.TransportUDP {
		return nil
	}
	for _, p := range s.Plan.Populations {
		if behave.UDPOnly(p.Behaviour) {
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

// udpListen is the in-process server's UDP listener for transport t: a
// free loopback port for drive.TransportUDP, none otherwise.
func udpListen(t string) server.UDPConfig {
	if t != drive.TransportUDP {
		return server.UDPConfig{}
	}
	return server.UDPConfig{Addr: "127.0.0.1:0"}
}
