package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicedev/sluice/core"
)

// TestLoopbackOverWebSocket: the same plan over WebSocket is served as
// over TCP: honest clients' frames decided as they were written, kind by
// kind, and a hostile population refused.
func TestLoopbackOverWebSocket(t *testing.T) {
	plan := Plan{Seed: 3, Duration: 1500 * time.Millisecond, Populations: []Population{
		{Name: "honest", Clients: 6, Behaviour: &Honest{
			ConnectSpread: 100 * time.Millisecond, AbilityEvery: 100 * time.Millisecond,
			ChatEvery: 200 * time.Millisecond, PurchaseEvery: 400 * time.Millisecond, PingEvery: 100 * time.Millisecond,
		}},
		{Name: "malformed", Clients: 1, Behaviour: &Malformed{Persist: Persist{ConnectSpread: 100 * time.Millisecond}}, Hostile: true},
	}}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Transport: TransportWS, Config: RunConfig{Timeout: time.Second}}, DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	rec := res.Recorder
	h := pop(t, res, "honest")
	for _, k := range []Kind{KindHello, KindMove, KindAbility, KindChat, KindPurchase, KindPing} {
		w := written(rec, h, k)
		assert.Positive(t, w, "honest wrote %v", k)
		assert.Equal(t, w, sum(rec.KindDecisions(h, k)), "honest %v: decided as written", k)
	}
	assert.Equal(t, rec.Count(h, KindPing, Accepted), rec.KindDecisions(h, KindPing)[Accepted], "every accepted ping's pong came back")
	assert.Zero(t, res.Disconnected[h], "no honest client disconnected")
	m := pop(t, res, "malformed")
	mr := rec.KindDecisions(m, KindRaw)
	assert.Positive(t, mr[core.Malformed]+mr[core.Lockout])
}

func TestTransportIsChecked(t *testing.T) {
	plan := Plan{Seed: 1, Duration: 100 * time.Millisecond, Populations: []Population{{Name: "h", Clients: 1, Behaviour: &Honest{}}}}
	_, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Transport: "quic"}, DefaultPolicy())
	var pe *ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Transport", pe.Field)
	plan.Populations[0].Behaviour = &WSPingFlood{}
	_, err = RunSim(context.Background(), RunSpec{Plan: plan, Transport: TransportWS}, DefaultPolicy())
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
	for _, n := range BehaviourNames() {
		b, _ := NewBehaviour(n)
		if raw, _ := wsOnly(b); !raw && !udpOnly(b) {
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
	pops := []Population{{Name: "honest", Clients: 4, Behaviour: &Honest{ConnectSpread: 100 * time.Millisecond, PingEvery: 100 * time.Millisecond}}}
	var names []string
	for _, n := range BehaviourNames() {
		b, _ := NewBehaviour(n)
		if raw, _ := wsOnly(b); raw {
			names = append(names, n)
			pops = append(pops, Population{Name: n, Clients: 20, Behaviour: b, Hostile: true})
		}
	}
	require.Len(t, names, 4)
	// Long enough for the server's upgrade timeout (5s) to end the slow
	// upgrades.
	plan := Plan{Seed: 5, Duration: 7 * time.Second, Populations: pops}
	p := DefaultPolicy()
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Transport: TransportWS, Config: RunConfig{Timeout: time.Second}}, p)
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	rec := res.Recorder
	h := pop(t, res, "honest")
	for _, k := range []Kind{KindHello, KindMove, KindPing} {
		w := written(rec, h, k)
		assert.Positive(t, w, "honest wrote %v", k)
		assert.Equal(t, w, sum(rec.KindDecisions(h, k)), "honest %v: decided as written", k)
		assert.Equal(t, w, rec.KindDecisions(h, k)[Accepted], "honest %v: every one accepted", k)
	}
	assert.Zero(t, res.Disconnected[h], "no honest client disconnected")
	for _, n := range names {
		i := pop(t, res, n)
		assert.Positive(t, res.Disconnected[i], "%s: the server ended its connections", n)
	}
}
