package scenarios

import (
	"fmt"

	"github.com/sluicedev/sluice/loadgen/drive"
)

// transportOf is the transport population i's clients speak: its own,
// else the scenario's, with "" named tcp.
func (s *Scenario) transportOf(i int) string {
	t := s.Transport
	if p := s.Population[i].Transport; p != "" {
		t = p
	}
	if t == "" {
		return drive.TransportTCP
	}
	return t
}

// MixedTransports reports whether the populations do not all speak one
// transport (a population's transport: key); such a scenario cannot run
// against a target, which is one address of one transport, unless
// --transport (Options.Transport) names one for all.
func (s *Scenario) MixedTransports() bool {
	for i := range s.Population {
		if s.transportOf(i) != s.transportOf(0) {
			return true
		}
	}
	return false
}

// oneTransport refuses populations of several transports in a run
// against a target: a target is one address, of one transport.
func (s *Scenario) oneTransport() error {
	for i := range s.Population {
		if t, t0 := s.transportOf(i), s.transportOf(0); t != t0 {
			return &OptionError{Option: "target", Msg: fmt.Sprintf("%s is one address, of one transport, but population %q speaks %s and %q %s: run them over one (--transport)", s.Target, s.Population[0].Name, t0, s.Population[i].Name, t)}
		}
	}
	return nil
}
