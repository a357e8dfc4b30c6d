package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
)

// Over UDP the server reads each datagram of a write at an instant of its
// own, so a strike score built by the drops of one write drains between
// them: under the default byte burst a tiny flood's first write (64 empty
// moves, one datagram each, every one charged the 800-byte minimum) has
// 9 moves accepted (the Hello's handshake took the tenth one's charge),
// then four ByteLimit drops add exactly the ladder's
// disconnect score, drained by the few microseconds between them, and
// the fifth datagram's drop ends the session. The sim, which reads a
// write's datagrams at one virtual instant, counted three drops and
// ended it on the fourth. The sim and the server over loopback sockets
// count the same drops.
func TestSimReadsEachDatagramAtItsOwnInstant(t *testing.T) {
	plan := behave.Plan{Seed: 5, Duration: time.Second, Populations: []behave.Population{
		{Name: "tiny", Clients: 1, Behaviour: &behave.TinyFlood{Persist: behave.Persist{ConnectSpread: -1, RetryEvery: -1}, WritesPerSecond: 20}},
	}}
	spec := RunSpec{Plan: plan, Transport: drive.TransportUDP, Config: drive.RunConfig{Timeout: time.Second}}
	// The default burst of 8,000 bytes, refilled at 8 bytes per ms rather
	// than 480: a client preempted in the middle of its write (a loaded
	// machine) would need 100 ms, not 1.7, to earn one datagram more.
	p := behave.DefaultPolicy()
	p.Transport.Bytes = core.Budget{Rate: new(8000.0), Burst: new(8000.0)}
	sim := runSim(t, spec, p)
	loop, err := RunLoopback(context.Background(), spec, p)
	require.NoError(t, err)
	s := sim.Recorder.KindDecisions(0, behave.KindMove)
	l := loop.Recorder.KindDecisions(0, behave.KindMove)
	t.Logf("moves: ByteLimit %d in the sim, %d over loopback; accepted %d, %d; sessions ended %d, %d",
		s[core.ByteLimit], l[core.ByteLimit], s[core.None], l[core.None], sim.Disconnected[0], loop.Disconnected[0])
	require.Equal(t, int64(1), sim.Disconnected[0], "the budget ends the session")
	require.Equal(t, int64(9), s[core.None], "the byte burst, less the Hello's handshake")
	require.Equal(t, int64(4), s[core.ByteLimit], "four drops before the one that ends it")
	require.Equal(t, s[core.ByteLimit], l[core.ByteLimit], "as the server over sockets counts")
	require.Equal(t, s[core.None], l[core.None])
}
