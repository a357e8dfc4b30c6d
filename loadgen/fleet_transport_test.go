package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicedev/sluice/loadgen/drive"
)

// A loopback run of several servers speaks every transport: each server
// listens for WebSocket and UDP too when the run does, and a client dials
// its current server's listener for its own transport, so the hopping
// account reaches (and is admitted by) every server over each transport.
func TestFleetLoopbackOverEveryTransport(t *testing.T) {
	for _, tr := range []string{drive.TransportWS, drive.TransportUDP} {
		t.Run(tr, func(t *testing.T) {
			s := hopSpec(2)
			s.Plan.Duration, s.Warmup = 3*time.Second, 500*time.Millisecond
			s.Transport = tr
			res, err := RunLoopback(context.Background(), s, hopPolicy(false))
			require.NoError(t, err)
			goleak.VerifyNone(t)
			require.True(t, res.Complete)
			require.Len(t, res.Servers, 2)
			for i, sc := range res.Servers {
				t.Logf("%s server %d admitted %d", tr, i, sc.Admitted[0])
				require.Positive(t, sc.Admitted[0], "server %d admitted nothing over %s", i, tr)
			}
		})
	}
}
