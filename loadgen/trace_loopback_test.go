package loadgen

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/stretchr/testify/require"
)

// The loopback replay of a trace hands each traced session its records
// from one streamed read of the trace, keeping only what its sessions'
// lookahead needs: pulled in time order as a worker pulls them, a match
// of 200 sessions and 200,000 messages (50 s at 20 Hz each, 400,000
// records and more) never has more than a second's records queued. Every
// message comes out, in one write of its own (each was a read of its
// own), from its session's own address group.
func TestTraceLoopbackStreamIsBounded(t *testing.T) {
	const sessions, messages = 200, 200_000
	path, _ := matchTrace(t, sessions, messages)
	p := behave.Plan{Seed: 1, Duration: 60 * time.Second, Populations: []behave.Population{
		{Name: "players", Clients: 1, Behaviour: &sim.Trace{File: path}},
	}}
	pol := behave.DefaultPolicy()
	clients, demuxes, err := loopbackClients(&p, &pol)
	require.NoError(t, err)
	defer closeDemuxes(demuxes)
	require.Len(t, clients, sessions)
	addrs := map[uint32]bool{}
	streams := make([]behave.Stream, len(clients))
	next := make([]behave.Action, len(clients))
	live := make([]bool, len(clients))
	for i := range clients {
		addrs[clients[i].Addr] = true
		streams[i] = clients[i].Stream()
		live[i] = streams[i].Next(&next[i])
		require.Equal(t, behave.OpConnect, next[i].Op)
	}
	require.Len(t, addrs, sessions, "an address group per recorded address")
	writes, frames := 0, 0
	for {
		best := -1
		for i := range next {
			if live[i] && (best < 0 || next[i].At < next[best].At) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		if a := next[best]; a.Op == behave.OpFrames {
			writes++
			frames += len(a.Data) / 18
		}
		live[best] = streams[best].Next(&next[best])
	}
	require.Equal(t, messages, writes)
	require.Equal(t, messages, frames)
	// 200 sessions at 20 Hz are 4,000 messages a second, each a read and
	// a message record.
	require.Less(t, demuxes[0].peak, 2*4000, "records queued at once")
	t.Logf("peak records queued: %d of %d", demuxes[0].peak, 2*messages)
}
