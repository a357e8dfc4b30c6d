package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/drive"
)

// A shipped scenario run over WebSocket in the sim and over loopback
// sockets gives the same outcome counts, population by population and
// kind by kind, within 2% (or 2, for the smallest counts): the sim models
// the transport's framing and charging (a message per frame, its header
// and mask on the byte budget).
func TestSimAgreesWithLoopbackOverWebSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("a run over real sockets")
	}
	s, err := Load("honest-only.yaml")
	require.NoError(t, err)
	opt := Options{Transport: drive.TransportWS, Duration: 4 * time.Second}
	sim, loop := runSimAndLoopback(t, s, opt)
	assert.Equal(t, "ws", sim.Results.Run.Transport)
	assert.Equal(t, "ws", loop.Results.Run.Transport)
	invalid := loop.Results.Variants[0].Invalid
	for i, sp := range sim.Results.Variants[0].Populations {
		lp := loop.Results.Variants[0].Populations[i]
		for j, sk := range sp.Kinds {
			lk := lp.Kinds[j]
			t.Logf("%s %s: sent %d/%d accepted %d/%d", sp.Name, sk.Kind, sk.Sent, lk.Sent, sk.Accepted, lk.Accepted)
			if len(invalid) > 0 {
				continue
			}
			assert.True(t, agree(sk.Sent, lk.Sent, 0), "%s %s: sent %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Sent, lk.Sent)
			assert.True(t, agree(sk.Accepted, lk.Accepted, 0), "%s %s: accepted %d in the sim, %d over loopback", sp.Name, sk.Kind, sk.Accepted, lk.Accepted)
		}
	}
	if len(invalid) > 0 {
		t.Skipf("the machine could not keep the load generator's schedule: %v", invalid)
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
