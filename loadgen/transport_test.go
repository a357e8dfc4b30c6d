package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
)

// TestLoopbackOverWebSocket: the same plan over WebSocket is served as
// over TCP: honest clients' frames decided as they were written, kind by
// kind, and a hostile population refused.
func TestLoopbackOverWebSocket(t *testing.T) {
	plan := behave.Plan{Seed: 3, Duration: 1500 * time.Millisecond, Populations: []behave.Population{
		{Name: "honest", Clients: 6, Behaviour: &behave.Honest{
			ConnectSpread: 100 * time.Millisecond, AbilityEvery: 100 * time.Millisecond,
			ChatEvery: 200 * time.Millisecond, PurchaseEvery: 400 * time.Millisecond, PingEvery: 100 * time.Millisecond,
		}},
		{Name: "malformed", Clients: 1, Behaviour: &behave.Malformed{Persist: behave.Persist{ConnectSpread: 100 * time.Millisecond}}, Hostile: true},
	}}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Transport: drive.TransportWS, Config: drive.RunConfig{Timeout: time.Second}}, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	rec := res.Recorder
	h := pop(t, res, "honest")
	for _, k := range []behave.Kind{behave.KindHello, behave.KindMove, behave.KindAbility, behave.KindChat, behave.KindPurchase, behave.KindPing} {
		w := written(rec, h, k)
		assert.Positive(t, w, "honest wrote %v", k)
		assert.Equal(t, w, sum(rec.KindDecisions(h, k)), "honest %v: decided as written", k)
	}
	assert.Equal(t, rec.Count(h, behave.KindPing, record.Accepted), rec.KindDecisions(h, behave.KindPing)[record.Accepted], "every accepted ping's pong came back")
	assert.Zero(t, res.Disconnected[h], "no honest client disconnected")
	m := pop(t, res, "malformed")
	mr := rec.KindDecisions(m, behave.KindRaw)
	assert.Positive(t, mr[core.Malformed]+mr[core.Lockout])
}

func TestTransportIsChecked(t *testing.T) {
	plan := behave.Plan{Seed: 1, Duration: 100 * time.Millisecond, Populations: []behave.Population{{Name: "h", Clients: 1, Behaviour: &behave.Honest{}}}}
	_, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Transport: "quic"}, behave.DefaultPolicy())
	var pe *behave.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Transport", pe.Field)
	plan.Populations[0].Behaviour = &behave.WSPingFlood{}
	_, err = RunSim(context.Background(), RunSpec{Plan: plan, Transport: drive.TransportWS}, behave.DefaultPolicy())
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Behaviour", pe.Field)
}

// tcpBehaviourNames is BehaviourNames without the behaviours that write
// WebSocket frames or UDP datagrams of their own: those run over
// transport ws or udp only, and never in the sim
// (TestLoopbackEveryWSBehaviour and TestLoopbackEveryUDPBehaviour run
// them).
func tcpBehaviourNames() []string {
	var out []string
	for _, n := range behave.BehaviourNames() {
		b, _ := behave.NewBehaviour(n)
		if raw, _ := behave.WSOnly(b); !raw && !behave.UDPOnly(b) {
			out = append(out, n)
		}
	}
	return out
}

// TestLoopbackEveryWSBehaviour runs every WebSocket behaviour against the
// in-process server over ws, beside honest players: the server refuses
// each (the frames it decides for them are never all accepted), the
// honest players keep their service, and every goroutine ends. (What the
// server decided on their frames is counted under no population, as for
// any frame before a Hello: loadgen/server's tests check those counts.)
func TestLoopbackEveryWSBehaviour(t *testing.T) {
	pops := []behave.Population{{Name: "honest", Clients: 4, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond, PingEvery: 100 * time.Millisecond}}}
	var names []string
	for _, n := range behave.BehaviourNames() {
		b, _ := behave.NewBehaviour(n)
		if raw, _ := behave.WSOnly(b); raw {
			names = append(names, n)
			pops = append(pops, behave.Population{Name: n, Clients: 20, Behaviour: b, Hostile: true})
		}
	}
	require.Len(t, names, 4)
	// Long enough for the server's upgrade timeout (5s) to end the slow
	// upgrades.
	plan := behave.Plan{Seed: 5, Duration: 7 * time.Second, Populations: pops}
	p := behave.DefaultPolicy()
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Transport: drive.TransportWS, Config: drive.RunConfig{Timeout: time.Second}}, p)
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	assertHonestServed(t, res)
	for _, n := range names {
		i := pop(t, res, n)
		assert.Positive(t, res.Disconnected[i], "%s: the server ended its connections", n)
	}
}
