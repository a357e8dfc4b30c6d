package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/drive"
)

// mixed-transports.yaml runs its populations over their own transports
// in the sim and over loopback sockets, and the two agree, population by
// population and kind by kind, within 2% (or 2) on the honest
// populations' counts and on every population's accepted counts; the
// results name each population's transport.
func TestMixedTransportsSimAgreesWithLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("a run over real sockets")
	}
	s, err := Load("mixed-transports.yaml")
	require.NoError(t, err)
	sim, loop := runSimAndLoopback(t, s, Options{Duration: 4 * time.Second})
	want := map[string]string{"tcp": "tcp", "ws": "ws", "udp": "udp", "ws-flood": "ws", "udp-flood": "udp"}
	invalid := loop.Results.Variants[0].Invalid
	for i, sp := range sim.Results.Variants[0].Populations {
		lp := loop.Results.Variants[0].Populations[i]
		assert.Equal(t, want[sp.Name], sp.Transport, "%s's transport in the sim's results", sp.Name)
		assert.Equal(t, want[lp.Name], lp.Transport, "%s's transport in loopback's results", lp.Name)
		for j, sk := range sp.Kinds {
			lk := lp.Kinds[j]
			t.Logf("%s %s: sent %d/%d accepted %d/%d", sp.Name, sk.Kind, sk.Sent, lk.Sent, sk.Accepted, lk.Accepted)
			if len(invalid) > 0 {
				continue
			}
			if !strings.Contains(sp.Name, "flood") { // a flooder may write once more before its Disconnect arrives
				assert.True(t, agree(sk.Sent, lk.Sent, 0), "%s %s: sent %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Sent, lk.Sent)
			}
			assert.True(t, agree(sk.Accepted, lk.Accepted, 0), "%s %s: accepted %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Accepted, lk.Accepted)
		}
	}
	if len(invalid) > 0 {
		t.Skipf("the machine could not keep the load generator's schedule: %v", invalid)
	}
}

// --transport puts every population on one transport, its own
// transport: key included, and the results then name none per
// population; a target, one address, refuses populations of several
// transports unless --transport names one.
func TestTransportOptionOverridesPopulations(t *testing.T) {
	s, err := Load("mixed-transports.yaml")
	require.NoError(t, err)
	out, err := Run(context.Background(), s, Options{Duration: time.Second, Transport: drive.TransportWS})
	require.NoError(t, err)
	assert.Equal(t, "ws", out.Results.Run.Transport)
	for _, p := range out.Results.Variants[0].Populations {
		assert.Empty(t, p.Transport, "%s", p.Name)
	}
	eff, err := s.withOptions(Options{Transport: drive.TransportUDP})
	require.NoError(t, err)
	assert.False(t, eff.MixedTransports())
	assert.Equal(t, drive.TransportUDP, eff.transportOf(0))
	assert.Equal(t, drive.TransportUDP, eff.transportOf(1))
	assert.True(t, s.MixedTransports(), "the scenario itself is untouched")

	_, err = s.Check(Options{Target: "127.0.0.1:9"})
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "target", oe.Option)
	assert.Contains(t, oe.Msg, "one transport")
	_, err = s.Check(Options{Target: "127.0.0.1:9", Transport: drive.TransportTCP})
	assert.NoError(t, err)
}

// A population's transport is checked where it is written, and a
// behaviour that writes frames of its own is held to its population's
// transport, not the scenario's.
func TestPopulationTransportIsParsedStrictly(t *testing.T) {
	_, err := Parse([]byte(`name: t
duration: 1s
policy_file: policies/game.yaml
populations:
  - {name: a, behaviour: honest, count: 1, transport: quic}
`), "t.yaml")
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "populations[0].transport", fe.Path)
	s, err := Parse([]byte(`name: t
duration: 1s
transport: ws
driver: loopback
policy: {channels: [{name: move, class: input}, {name: ability, class: input}, {name: chat, class: request}, {name: purchase, class: request}, {name: ping, class: input}]}
populations:
  - {name: a, behaviour: honest, count: 1}
  - {name: b, behaviour: ws-ping-flood, count: 1, transport: tcp}
`), "t.yaml")
	require.NoError(t, err)
	_, err = s.Check(Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "population b")
	assert.Contains(t, err.Error(), "over transport ws only")
}
