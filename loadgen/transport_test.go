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
	_, err = RunSim(context.Background(), RunSpec{Plan: plan, Transport: TransportWS}, DefaultPolicy())
	require.ErrorAs(t, err, &pe)
}
