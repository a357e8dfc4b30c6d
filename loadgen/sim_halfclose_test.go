package loadgen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
)

// WebSocket and UDP have no half-close: in the sim, as over loopback
// sockets, a half-closing client over either is refused, closes its
// connection instead, and the chats it awaited are Disconnected, whether
// the transport is the run's or only its population's; over TCP they are
// all answered (TestSimHalfCloseAndSparseIDs).
func TestSimRefusesHalfCloseWithoutOne(t *testing.T) {
	for _, tc := range []struct{ name, run, pop string }{
		{"ws", drive.TransportWS, ""},
		{"udp", drive.TransportUDP, ""},
		{"udp-population", drive.TransportTCP, drive.TransportUDP},
		{"ws-population", drive.TransportTCP, drive.TransportWS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := behave.Plan{Seed: 3, Duration: 6 * time.Second, Populations: []behave.Population{
				{Name: "halfclose", Clients: 4, Transport: tc.pop, Behaviour: &behave.HalfClose{Every: time.Second, Requests: 3}},
			}}
			res := runSim(t, RunSpec{Plan: plan, Transport: tc.run, Config: drive.RunConfig{Timeout: 500 * time.Millisecond}}, behave.DefaultPolicy())
			assert.Positive(t, res.Recorder.Count(0, behave.KindChat, record.Disconnected), "the chats awaited at each close")
		})
	}
}
