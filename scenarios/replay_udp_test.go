package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/drive"
)

// replay-compare's trace, recorded over a stream, replayed in the sim
// over UDP as the loopback replay carries it: each recorded read's frames
// go out in one write, one datagram each, so a laggy player's flush,
// one read when it was recorded, is charged per datagram (ByteLimit
// drops where the recording had none). The budget then cuts some laggy
// sessions mid-flush: the rest of that write is sent unread, and what
// the player would have written after is not sent (no drop), as the
// loopback driver's clients count them.
func TestSimReplaysATraceOverUDPPerDatagram(t *testing.T) {
	s, err := Load("replay-compare.yaml")
	require.NoError(t, err)
	out, err := Run(context.Background(), s, Options{Transport: drive.TransportUDP, Duration: agreeDuration, Driver: DriverSim})
	require.NoError(t, err)
	v := out.Results.Variants[0]
	require.Equal(t, "recorded", v.Name)
	p := v.Population("laggy")
	require.NotNil(t, p)
	var move *struct{ sent, accepted, decided, notSent, byteLimit, disconnected int64 }
	for _, k := range p.Kinds {
		if k.Kind != "move" {
			continue
		}
		move = &struct{ sent, accepted, decided, notSent, byteLimit, disconnected int64 }{k.Sent, k.Accepted, k.Accepted, k.NotSent, k.Drops["ByteLimit"], k.Drops["Disconnected"]}
		for _, n := range k.Drops {
			move.decided += n
		}
	}
	require.NotNil(t, move)
	t.Logf("laggy moves: %+v", *move)
	require.Positive(t, move.byteLimit, "each datagram of a flush charged on its own")
	require.Zero(t, move.disconnected, "nothing the server cut is a drop")
	require.Positive(t, move.notSent, "what the player would have written after its session was cut")
	require.Greater(t, move.sent, move.decided, "the rest of the write the session was cut in: written, unread")
}
