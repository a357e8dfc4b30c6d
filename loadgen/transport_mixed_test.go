package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// mixedTransportsPlan has a population over each transport, sharing no
// address or account: honest players over tcp and ws, a byte flood over
// ws (the WebSocket headers its frames carry count against its byte
// budget) and laggy players over udp (each datagram of a burst is
// charged the minimum charge).
func mixedTransportsPlan(d time.Duration) behave.Plan {
	return behave.Plan{Seed: 29, Duration: d, Populations: []behave.Population{
		{Name: "tcp-honest", Clients: 6, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond}, Transport: drive.TransportTCP},
		{Name: "ws-honest", Clients: 6, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond}, Transport: drive.TransportWS},
		{Name: "ws-bytes", Clients: 2, Behaviour: &behave.ByteFlood{}, Hostile: true, Transport: drive.TransportWS},
		{Name: "udp-laggy", Clients: 6, Behaviour: &behave.Laggy{Honest: behave.Honest{ConnectSpread: 100 * time.Millisecond}, FreezeEvery: 300 * time.Millisecond, DropEvery: -1}, Transport: drive.TransportUDP},
	}}
}

// allOver is plan with every population over transport t.
func allOver(plan behave.Plan, t string) behave.Plan {
	plan.Populations = append([]behave.Population(nil), plan.Populations...)
	for i := range plan.Populations {
		plan.Populations[i].Transport = t
	}
	return plan
}

// popCounts are one population's counts by kind: what its clients saw
// and what the server decided.
type popCounts struct {
	Outcomes, Decisions [behave.NumKinds][record.NumOutcomes]int64
}

func countsOf(r *Result, pop int) (c popCounts) {
	for k := range behave.NumKinds {
		c.Outcomes[k] = r.Recorder.Outcomes(pop, k)
		c.Decisions[k] = r.Recorder.KindDecisions(pop, k)
	}
	return c
}

// In the sim, each population of a run mixing transports counts exactly
// what it counts when the whole run is over its transport, and the
// transports do differ for the flood and the laggy players: each
// connection is modelled over its own population's transport.
func TestSimMixedTransports(t *testing.T) {
	plan := mixedTransportsPlan(3 * time.Second)
	mixed := runSim(t, RunSpec{Plan: plan}, behave.DefaultPolicy())
	alone := map[string]*Result{}
	for _, tr := range drive.Transports {
		alone[tr] = runSim(t, RunSpec{Plan: allOver(plan, tr)}, behave.DefaultPolicy())
	}
	for i, p := range plan.Populations {
		assert.Equal(t, countsOf(alone[p.Transport], i), countsOf(mixed, i), "%s: as over %s alone", p.Name, p.Transport)
	}
	flood, laggy := pop(t, mixed, "ws-bytes"), pop(t, mixed, "udp-laggy")
	assert.NotEqual(t, countsOf(alone[drive.TransportTCP], flood), countsOf(mixed, flood), "the flood over ws differs from over tcp")
	assert.NotEqual(t, countsOf(alone[drive.TransportTCP], laggy), countsOf(mixed, laggy), "the laggy players over udp differ from over tcp")
	assert.Equal(t, canonical(t, mixed), canonical(t, runSim(t, RunSpec{Plan: plan}, behave.DefaultPolicy())), "deterministic")
}

// Over loopback, the in-process server listens on every transport a
// population speaks, each client dials its own, and each honest
// population's counts, kind by kind, are within 2% (or 2) of its counts
// when the whole run is over its transport, on either driver (the sim
// anchors it: a driver that dialled every client over tcp would agree
// with itself).
func TestLoopbackMixedTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs over real sockets")
	}
	plan := mixedTransportsPlan(3 * time.Second)
	run := func(p behave.Plan) *Result {
		res, err := RunLoopback(context.Background(), RunSpec{Plan: p, Workers: 2, Config: drive.RunConfig{Timeout: time.Second}}, behave.DefaultPolicy())
		require.NoError(t, err)
		require.True(t, res.Complete)
		if err := res.Recorder.CheckSendLag(0.99, 50*time.Millisecond); err != nil {
			t.Skipf("the machine did not keep up: %v", err)
		}
		return res
	}
	mixed := run(plan)
	goleak.VerifyNone(t)
	for i, p := range plan.Populations {
		if p.Hostile {
			continue // a flooder may write once more before its Disconnect arrives
		}
		alone := run(allOver(plan, p.Transport))
		sim := runSim(t, RunSpec{Plan: allOver(plan, p.Transport)}, behave.DefaultPolicy())
		for _, k := range []behave.Kind{behave.KindHello, behave.KindMove, behave.KindAbility, behave.KindPing} {
			s, m := sim.Recorder.KindDecisions(i, k)[record.Accepted], mixed.Recorder.KindDecisions(i, k)[record.Accepted]
			assert.LessOrEqual(t, abs64(s-m), max(2, s/50), "%s %v: accepted %d in the sim over %s alone, %d mixed over loopback", p.Name, k, s, p.Transport, m)
			a, m := written(alone.Recorder, i, k), written(mixed.Recorder, i, k)
			assert.LessOrEqual(t, abs64(a-m), max(2, a/50), "%s %v: written %d over %s alone, %d mixed", p.Name, k, a, p.Transport, m)
			a, m = alone.Recorder.KindDecisions(i, k)[record.Accepted], mixed.Recorder.KindDecisions(i, k)[record.Accepted]
			assert.LessOrEqual(t, abs64(a-m), max(2, a/50), "%s %v: accepted %d over %s alone, %d mixed", p.Name, k, a, p.Transport, m)
			t.Logf("%s %v: accepted %d alone, %d mixed", p.Name, k, a, m)
		}
		assert.Positive(t, written(mixed.Recorder, i, behave.KindMove), "%s moved", p.Name)
	}
	bytesLost := mixed.Recorder.KindDecisions(pop(t, mixed, "ws-bytes"), behave.KindMove)[core.ByteLimit]
	assert.Positive(t, bytesLost+mixed.Disconnected[pop(t, mixed, "ws-bytes")], "the byte flood was stopped")
}

// A population's transport is checked, and so is each behaviour's and the
// network model's against its population's: a behaviour writing frames
// of its own runs over its population's transport, the network model
// needs a population over udp, and a remote server (one address) takes
// one transport.
func TestPopulationTransportIsChecked(t *testing.T) {
	honest := behave.Population{Name: "h", Clients: 1, Behaviour: &behave.Honest{}}
	check := func(field string, spec RunSpec) {
		t.Helper()
		_, err := RunLoopback(context.Background(), spec, behave.DefaultPolicy())
		var pe *behave.ParamError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, field, pe.Field, "%v", err)
	}
	plan := func(pops ...behave.Population) behave.Plan {
		return behave.Plan{Seed: 1, Duration: 100 * time.Millisecond, Populations: pops}
	}
	bad := honest
	bad.Transport = "quic"
	check("Transport", RunSpec{Plan: plan(bad)})
	ping := behave.Population{Name: "p", Clients: 1, Behaviour: &behave.WSPingFlood{}, Transport: drive.TransportTCP}
	check("Behaviour", RunSpec{Plan: plan(honest, ping), Transport: drive.TransportWS})
	garbage := behave.Population{Name: "g", Clients: 1, Behaviour: &behave.UDPGarbage{}}
	check("Behaviour", RunSpec{Plan: plan(honest, garbage), Transport: drive.TransportWS})
	check("Network.Loss", RunSpec{Plan: plan(honest), Network: drive.Network{Loss: 0.1}})
	ws := honest
	ws.Name, ws.Transport = "w", drive.TransportWS
	check("Transport", RunSpec{Plan: plan(honest, ws), Remote: &Remote{Addr: mustAddrPort(t, "127.0.0.1:9"), Stats: noStats}})

	// Over their own transports they run: a udp garbage population and a
	// network model beside tcp players.
	garbage.Transport = drive.TransportUDP
	spec := RunSpec{Plan: plan(honest, garbage), Network: drive.Network{Loss: 0.1}}
	require.NoError(t, CheckRun(spec, behave.DefaultPolicy()))
}
