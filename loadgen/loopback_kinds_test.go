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

// written returns how many messages of kind k the population wrote: every
// outcome but those of messages never written.
func written(rec *record.Recorder, pop int, k behave.Kind) int64 {
	o := rec.Outcomes(pop, k)
	return sum(o) - o[record.NotSent] - o[record.Refused] - o[record.HeldAtEnd]
}

// assertHonestServed checks that the population "honest" of res kept its
// service beside whatever else ran: every hello, move and ping it wrote
// was decided, and accepted, and none of its clients was disconnected.
func assertHonestServed(t *testing.T, res *Result) {
	t.Helper()
	rec := res.Recorder
	h := pop(t, res, "honest")
	for _, k := range []behave.Kind{behave.KindHello, behave.KindMove, behave.KindPing} {
		w := written(rec, h, k)
		assert.Positive(t, w, "honest wrote %v", k)
		assert.Equal(t, w, sum(rec.KindDecisions(h, k)), "honest %v: decided as written", k)
		assert.Equal(t, w, rec.KindDecisions(h, k)[record.Accepted], "honest %v: every one accepted", k)
	}
	assert.Zero(t, res.Disconnected[h], "no honest client disconnected")
}

// TestLoopbackKindDecisionsExact: over loopback, the server's decisions by
// kind come from its per-channel counters, so for honest clients they match
// what the clients wrote, kind by kind.
func TestLoopbackKindDecisionsExact(t *testing.T) {
	plan := behave.Plan{Seed: 3, Duration: 1500 * time.Millisecond, Populations: []behave.Population{
		{Name: "honest", Clients: 6, Behaviour: &behave.Honest{
			ConnectSpread: 100 * time.Millisecond, AbilityEvery: 100 * time.Millisecond,
			ChatEvery: 200 * time.Millisecond, PurchaseEvery: 400 * time.Millisecond, PingEvery: 100 * time.Millisecond,
		}},
		{Name: "malformed", Clients: 1, Behaviour: &behave.Malformed{Persist: behave.Persist{ConnectSpread: 100 * time.Millisecond}}, Hostile: true},
	}}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Workers: 2, Config: drive.RunConfig{Timeout: time.Second}}, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	rec := res.Recorder
	for p, label := range res.Labels {
		var series [record.NumOutcomes]int64
		for _, pt := range res.Series[p] {
			for o := range record.ServerReasons {
				series[o] += pt.Outcomes[o]
			}
		}
		assert.Equal(t, rec.Decisions(p), series, "%s: the series add up (no warm-up)", label)
	}
	h := pop(t, res, "honest")
	for _, k := range []behave.Kind{behave.KindHello, behave.KindMove, behave.KindAbility, behave.KindChat, behave.KindPurchase, behave.KindPing} {
		w := written(rec, h, k)
		assert.Positive(t, w, "honest wrote %v", k)
		assert.Equal(t, w, sum(rec.KindDecisions(h, k)), "honest %v: decided as written", k)
	}
	assert.Equal(t, rec.Count(h, behave.KindMove, record.Sent), rec.KindDecisions(h, behave.KindMove)[record.Accepted])
	assert.Equal(t, rec.Count(h, behave.KindPing, record.Accepted), rec.KindDecisions(h, behave.KindPing)[record.Accepted])
	assert.Zero(t, sum(rec.KindDecisions(h, behave.KindRaw)))
	m := pop(t, res, "malformed")
	mr := rec.KindDecisions(m, behave.KindRaw)
	assert.Positive(t, mr[core.Malformed]+mr[core.Lockout])
	assert.Zero(t, sum(rec.KindDecisions(m, behave.KindMove))+sum(rec.KindDecisions(m, behave.KindChat)))
}

func TestChannelKinds(t *testing.T) {
	p := behave.DefaultPolicy()
	p.Channels = append(p.Channels, core.Channel{Name: "emote", Class: core.ClassInput})
	chans, err := behave.ChannelsOf(&p)
	require.NoError(t, err)
	kinds := channelKinds(&p, chans)
	assert.Equal(t, behave.KindMove, kinds["move"])
	assert.Equal(t, behave.KindPurchase, kinds["purchase"])
	assert.Equal(t, behave.KindHello, kinds["(hello)"])
	assert.Equal(t, behave.KindPing, kinds["(ping)"])
	for _, name := range []string{"ping", "emote", "(unknown)"} {
		_, ok := kinds[name]
		assert.False(t, ok, "%s is raw", name)
	}
}

// TestLoopbackNoLimits: a loopback run without the gate accepts what the
// gate would refuse; the sim refuses the option.
func TestLoopbackNoLimits(t *testing.T) {
	plan := behave.Plan{Seed: 5, Duration: time.Second, Populations: []behave.Population{
		{Name: "tiny-flood", Clients: 1, Behaviour: &behave.TinyFlood{Persist: behave.Persist{ConnectSpread: 50 * time.Millisecond}}},
	}}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, NoLimits: true, Config: drive.RunConfig{Timeout: 500 * time.Millisecond}}, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	d := res.Recorder.Decisions(0)
	assert.Positive(t, d[record.Accepted])
	assert.Equal(t, d[record.Accepted], sum(d), "nothing refused: %v", d)
	assert.Zero(t, res.Disconnected[0])
	assert.Equal(t, written(res.Recorder, 0, behave.KindMove), res.Recorder.KindDecisions(0, behave.KindMove)[record.Accepted])

	_, err = RunSim(context.Background(), RunSpec{Plan: plan, NoLimits: true}, behave.DefaultPolicy())
	var pe *behave.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "NoLimits", pe.Field)
}
