package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/reports"
)

// A shipped scenario run over UDP in the sim and over loopback sockets
// gives the same outcome counts (accepted; and sent, for honest
// populations), population by population and kind by kind, within 2%
// (or 2, for the smallest counts): the sim models the
// transport's framing and charging (a datagram per frame, each one read
// of its header and frame, the Hello in a padded handshake). quickstart
// has hostile floods beside its honest players; flood-mix is all floods.
func TestSimAgreesWithLoopbackOverUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs over real sockets")
	}
	for _, name := range []string{"quickstart.yaml", "flood-mix.yaml"} {
		t.Run(name, func(t *testing.T) {
			s, err := Load(name)
			require.NoError(t, err)
			opt := Options{Transport: drive.TransportUDP, Duration: 4 * time.Second}
			sim, loop := runSimAndLoopback(t, s, opt)
			assert.Equal(t, "udp", sim.Results.Run.Transport)
			assert.Equal(t, "udp", loop.Results.Run.Transport)
			var invalid []string
			for v := range sim.Results.Variants {
				invalid = append(invalid, loop.Results.Variants[v].Invalid...)
				for i, sp := range sim.Results.Variants[v].Populations {
					lp := loop.Results.Variants[v].Populations[i]
					for j, sk := range sp.Kinds {
						lk := lp.Kinds[j]
						t.Logf("%s %s %s: sent %d/%d accepted %d/%d", sim.Results.Variants[v].Name, sp.Name, sk.Kind, sk.Sent, lk.Sent, sk.Accepted, lk.Accepted)
						if len(loop.Results.Variants[v].Invalid) > 0 {
							continue
						}
						// A hostile client's sends after the server ended its
						// session are not outcomes: over a socket the
						// flooder may write once more before its Disconnect
						// arrives (one run: 256 moves sent against the
						// sim's 192, every accepted count equal), which the
						// sim, where the Disconnect is instant, never does.
						if sp.Role != reports.Hostile {
							assert.True(t, agree(sk.Sent, lk.Sent, 0), "%s %s: sent %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Sent, lk.Sent)
						}
						assert.True(t, agree(sk.Accepted, lk.Accepted, 0), "%s %s: accepted %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Accepted, lk.Accepted)
					}
				}
			}
			if len(invalid) > 0 {
				t.Skipf("the machine could not keep the load generator's schedule: %v", invalid)
			}
		})
	}
}

// A scenario's network: field reaches the run: the sim over udp loses
// about its share of the honest moves, reproducibly, and a model over a
// transport that is not udp is refused, naming the field.
func TestScenarioNetworkModel(t *testing.T) {
	src := []byte(`name: lossy
seed: 3
duration: 2s
warmup: 200ms
transport: udp
network: {loss: 0.1, reorder: 0.02, reorderDelay: 20ms}
policy_file: policies/game.yaml
populations:
  - name: honest
    behaviour: honest
    count: 10
`)
	s, err := Parse(src, "lossy.yaml")
	require.NoError(t, err)
	assert.Equal(t, drive.Network{Loss: 0.1, Reorder: 0.02, ReorderDelay: 20 * time.Millisecond}, s.Network)
	s, err = Load("quickstart.yaml")
	require.NoError(t, err)
	s.Network = drive.Network{Loss: 0.1}
	a, err := Run(context.Background(), s, Options{Transport: drive.TransportUDP, Driver: DriverSim, Duration: 2 * time.Second})
	require.NoError(t, err)
	b, err := Run(context.Background(), s, Options{Transport: drive.TransportUDP, Driver: DriverSim, Duration: 2 * time.Second})
	require.NoError(t, err)
	pa, pb := a.Results.Variants[0].Populations[0], b.Results.Variants[0].Populations[0]
	assert.Equal(t, pa.Kinds, pb.Kinds, "the same seed, the same outcomes")
	for _, k := range pa.Kinds {
		if k.Kind == "move" {
			t.Logf("honest moves: sent %d, accepted %d", k.Sent, k.Accepted)
			assert.InDelta(t, 0.9, float64(k.Accepted)/float64(k.Sent), 0.03)
		}
	}
	_, err = Run(context.Background(), s, Options{Transport: drive.TransportTCP, Driver: DriverSim, Duration: time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Network.Loss")
}
