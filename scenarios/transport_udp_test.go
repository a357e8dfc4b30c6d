package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen"
)

// A shipped scenario run over UDP in the sim and over loopback sockets
// gives the same outcome counts, population by population and kind by
// kind, within 2% (or 2, for the smallest counts): the sim models the
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
			opt := Options{Transport: loadgen.TransportUDP, Duration: 4 * time.Second}
			opt.Driver = DriverSim
			sim, err := Run(context.Background(), s, opt)
			require.NoError(t, err)
			opt.Driver = DriverLoopback
			loop, err := Run(context.Background(), s, opt)
			require.NoError(t, err)
			assert.Equal(t, "udp", sim.Results.Run.Transport)
			assert.Equal(t, "udp", loop.Results.Run.Transport)
			near := func(a, b int64) bool { return abs(a-b) <= max(2, max(a, b)/50) }
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
						assert.True(t, near(sk.Sent, lk.Sent), "%s %s: sent %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Sent, lk.Sent)
						assert.True(t, near(sk.Accepted, lk.Accepted), "%s %s: accepted %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Accepted, lk.Accepted)
					}
				}
			}
			if len(invalid) > 0 {
				t.Skipf("the machine could not keep the load generator's schedule: %v", invalid)
			}
		})
	}
}
