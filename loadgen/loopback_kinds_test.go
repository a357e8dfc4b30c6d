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

// written returns how many messages of kind k the population wrote: every
// outcome but those of messages never written.
func written(rec *Recorder, pop int, k Kind) int64 {
	o := rec.Outcomes(pop, k)
	return sum(o) - o[NotSent] - o[Refused] - o[HeldAtEnd]
}

// TestLoopbackKindDecisionsExact: over loopback, the server's decisions by
// kind come from its per-channel counters, so for honest clients they match
// what the clients wrote, kind by kind.
func TestLoopbackKindDecisionsExact(t *testing.T) {
	plan := Plan{Seed: 3, Duration: 1500 * time.Millisecond, Populations: []Population{
		{Name: "honest", Clients: 6, Behaviour: &Honest{
			ConnectSpread: 100 * time.Millisecond, AbilityEvery: 100 * time.Millisecond,
			ChatEvery: 200 * time.Millisecond, PurchaseEvery: 400 * time.Millisecond, PingEvery: 100 * time.Millisecond,
		}},
		{Name: "malformed", Clients: 1, Behaviour: &Malformed{Persist: Persist{ConnectSpread: 100 * time.Millisecond}}, Hostile: true},
	}}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Config: RunConfig{Timeout: time.Second}}, DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	rec := res.Recorder
	for p, label := range res.Labels {
		var series [NumOutcomes]int64
		for _, pt := range res.Series[p] {
			for o := range ServerReasons {
				series[o] += pt.Outcomes[o]
			}
		}
		assert.Equal(t, rec.Decisions(p), series, "%s: the series add up (no warm-up)", label)
	}
	h := pop(t, res, "honest")
	for _, k := range []Kind{KindHello, KindMove, KindAbility, KindChat, KindPurchase, KindPing} {
		w := written(rec, h, k)
		assert.Positive(t, w, "honest wrote %v", k)
		assert.Equal(t, w, sum(rec.KindDecisions(h, k)), "honest %v: decided as written", k)
	}
	assert.Equal(t, rec.Count(h, KindMove, Sent), rec.KindDecisions(h, KindMove)[Accepted])
	assert.Equal(t, rec.Count(h, KindPing, Accepted), rec.KindDecisions(h, KindPing)[Accepted])
	assert.Zero(t, sum(rec.KindDecisions(h, KindRaw)))
	m := pop(t, res, "malformed")
	mr := rec.KindDecisions(m, KindRaw)
	assert.Positive(t, mr[core.Malformed]+mr[core.Lockout])
	assert.Zero(t, sum(rec.KindDecisions(m, KindMove))+sum(rec.KindDecisions(m, KindChat)))
}

func TestChannelKinds(t *testing.T) {
	p := DefaultPolicy()
	p.Channels = append(p.Channels, core.Channel{Name: "emote", Class: core.ClassInput})
	chans, err := ChannelsOf(&p)
	require.NoError(t, err)
	kinds := channelKinds(&p, chans)
	assert.Equal(t, KindMove, kinds["move"])
	assert.Equal(t, KindPurchase, kinds["purchase"])
	assert.Equal(t, KindHello, kinds["(hello)"])
	assert.Equal(t, KindPing, kinds["(ping)"])
	for _, name := range []string{"ping", "emote", "(unknown)"} {
		_, ok := kinds[name]
		assert.False(t, ok, "%s is raw", name)
	}
}

// TestLoopbackNoLimits: a loopback run without the gate accepts what the
// gate would refuse; the sim refuses the option.
func TestLoopbackNoLimits(t *testing.T) {
	plan := Plan{Seed: 5, Duration: time.Second, Populations: []Population{
		{Name: "tiny-flood", Clients: 1, Behaviour: &TinyFlood{Persist: Persist{ConnectSpread: 50 * time.Millisecond}}},
	}}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, NoLimits: true, Config: RunConfig{Timeout: 500 * time.Millisecond}}, DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	d := res.Recorder.Decisions(0)
	assert.Positive(t, d[Accepted])
	assert.Equal(t, d[Accepted], sum(d), "nothing refused: %v", d)
	assert.Zero(t, res.Disconnected[0])
	assert.Equal(t, written(res.Recorder, 0, KindMove), res.Recorder.KindDecisions(0, KindMove)[Accepted])

	_, err = RunSim(context.Background(), RunSpec{Plan: plan, NoLimits: true}, DefaultPolicy())
	var pe *ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "NoLimits", pe.Field)
}
