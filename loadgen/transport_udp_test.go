package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestLoopbackEveryUDPBehaviour runs every UDP behaviour against the
// in-process server over udp, beside honest players, and a tiny-flood
// (a datagram flood on a session): the honest players keep their
// service (every frame written accepted, none disconnected), the raw
// behaviours reach no session (the server decides none of their
// datagrams, and answers them with nothing a frame reader sees), the
// flood is ended by the gate, and every goroutine ends.
func TestLoopbackEveryUDPBehaviour(t *testing.T) {
	pops := []behave.Population{
		{Name: "honest", Clients: 4, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond, PingEvery: 100 * time.Millisecond}},
		{Name: "flood", Clients: 4, Behaviour: &behave.TinyFlood{}, Hostile: true},
	}
	var names []string
	for _, n := range behave.BehaviourNames() {
		b, _ := behave.NewBehaviour(n)
		if behave.UDPOnly(b) {
			names = append(names, n)
			pops = append(pops, behave.Population{Name: n, Clients: 20, Behaviour: b, Hostile: true})
		}
	}
	require.Len(t, names, 5)
	plan := behave.Plan{Seed: 5, Duration: 3 * time.Second, Populations: pops}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Transport: drive.TransportUDP, Config: drive.RunConfig{Timeout: time.Second}}, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	rec := res.Recorder
	assertHonestServed(t, res)
	f := pop(t, res, "flood")
	assert.Positive(t, res.Disconnected[f], "the flood's sessions were ended")
	for _, n := range names {
		i := pop(t, res, n)
		assert.Positive(t, written(rec, i, behave.KindRaw), "%s wrote", n)
		assert.Zero(t, sum(rec.KindDecisions(i, behave.KindRaw)), "%s: no datagram reached a session", n)
	}
}

// The UDP behaviours run over transport udp only, and never in the sim.
func TestUDPBehavioursRefusedElsewhere(t *testing.T) {
	plan := behave.Plan{Seed: 1, Duration: time.Second, Populations: []behave.Population{{Name: "g", Clients: 1, Behaviour: &behave.UDPGarbage{}, Hostile: true}}}
	var pe *behave.ParamError
	_, err := RunLoopback(context.Background(), RunSpec{Plan: plan}, behave.DefaultPolicy())
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Behaviour", pe.Field)
	_, err = RunSim(context.Background(), RunSpec{Plan: plan, Transport: drive.TransportUDP}, behave.DefaultPolicy())
	require.ErrorAs(t, err, &pe)
}

// The network model is seeded: the same plan gives the same outcomes in
// the sim every time, loses about Loss of the datagrams, and the loopback
// driver, drawing the same fates for the same datagrams, agrees with the
// sim within 2% on every kind's outcome counts.
func TestUDPNetworkModelSimAgreesWithLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("runs over real sockets")
	}
	pops := []behave.Population{{Name: "honest", Clients: 20, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond}}}
	plan := behave.Plan{Seed: 11, Duration: 3 * time.Second, Populations: pops}
	netw := drive.Network{Loss: 0.05, Reorder: 0.05, ReorderDelay: 20 * time.Millisecond}
	spec := RunSpec{Plan: plan, Transport: drive.TransportUDP, Network: netw}
	sim1, err := RunSim(context.Background(), spec, behave.DefaultPolicy())
	require.NoError(t, err)
	sim2, err := RunSim(context.Background(), spec, behave.DefaultPolicy())
	require.NoError(t, err)
	perfect, err := RunSim(context.Background(), RunSpec{Plan: plan, Transport: drive.TransportUDP}, behave.DefaultPolicy())
	require.NoError(t, err)
	loop, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Transport: drive.TransportUDP, Network: netw, Config: drive.RunConfig{Timeout: time.Second}}, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	h := pop(t, sim1, "honest")
	near := func(a, b int64) bool { return abs64(a-b) <= max(2, max(a, b)/50) }
	for _, k := range []behave.Kind{behave.KindHello, behave.KindMove, behave.KindPing, behave.KindAbility} {
		d1, d2 := sim1.Recorder.KindDecisions(h, k), sim2.Recorder.KindDecisions(h, k)
		assert.Equal(t, d1, d2, "%v: the same seed, the same outcomes", k)
		w, a := written(sim1.Recorder, h, k), d1[record.Accepted]
		pa := perfect.Recorder.KindDecisions(h, k)[record.Accepted]
		la := loop.Recorder.KindDecisions(h, k)[record.Accepted]
		t.Logf("%v: written %d, accepted %d (perfect network %d, loopback %d)", k, w, a, pa, la)
		assert.True(t, near(a, la), "%v: accepted %d in the sim, %d over loopback", k, a, la)
		if k == behave.KindMove {
			assert.Less(t, a, w, "moves lost")
			assert.InDelta(t, 1-netw.Loss, float64(a)/float64(w), 0.03, "about 5%% of the moves lost")
		}
	}
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
