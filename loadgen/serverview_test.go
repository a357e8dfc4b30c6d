package loadgen

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/server"
)

// viewRows renders a check's rows for a failure message.
func viewRows(ck record.ViewCheck) string {
	var b strings.Builder
	for _, r := range ck.Rows {
		fmt.Fprintf(&b, "%-22s %-22s %-24s gate %6d pops %6d before %4d compared %v\n", r.Gate, r.Server, r.Reason, r.GateCount, r.Populations, r.BeforeHello, r.Compared)
	}
	return b.String()
}

// Every behaviour against the in-process server, with a warm-up: the
// gate's counters and the server's per-population counters agree on every
// comparable count, and the window's gate counts are those of the gate
// between the warm-up's read and the end.
func TestServerViewAgreesForEveryBehaviour(t *testing.T) {
	var pops []behave.Population
	for _, name := range tcpBehaviourNames() {
		b, err := behave.NewBehaviour(name)
		require.NoError(t, err)
		pops = append(pops, behave.Population{Name: name, Clients: 2, Behaviour: b, PerAccount: 2})
	}
	plan := behave.Plan{Seed: 5, Duration: 2 * time.Second, Populations: pops}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Warmup: 500 * time.Millisecond, Config: drive.RunConfig{Timeout: 300 * time.Millisecond}}, behave.DefaultPolicy())
	require.NoError(t, err)
	require.True(t, res.Complete)
	sv := res.Server
	require.NotNil(t, sv)
	ck := sv.Check
	require.True(t, ck.Made, ck.Why)
	assert.True(t, ck.Agree, "the gate and the server disagree:\n%s", viewRows(ck))
	t.Logf("rows:\n%s", viewRows(ck))
	var compared, nonZero int
	for _, r := range ck.Rows {
		if r.Compared {
			compared++
			if r.GateCount > 0 {
				nonZero++
			}
		}
	}
	assert.Greater(t, nonZero, 3, "the comparison covers real counts:\n%s", viewRows(ck))
	assert.Positive(t, compared)
	// Every kind of comparable row this traffic makes is there: accepted
	// moves, refusals on a channel, malformed frames.
	has := func(gate, reason string) bool {
		for _, r := range ck.Rows {
			if r.Gate == gate && r.Reason == reason && r.Compared && r.GateCount > 0 {
				return true
			}
		}
		return false
	}
	assert.True(t, has("move", "None+QueueFull+Closed"), viewRows(ck))
	assert.True(t, has("(unknown)+(session)", "Malformed"), viewRows(ck))
	w := sv.Window
	assert.Positive(t, w.Messages["move"]["None"])
	assert.Positive(t, w.Actions["Accept"])
	var floods int64
	for _, n := range w.Floods {
		floods += n
	}
	assert.Positive(t, floods, "the floods were reported by reason")
}

// The check fails when one count is off: a frame the server counts that
// the gate did not decide (or the other way round) shows as a disagreeing
// row, in whichever comparable row it falls.
func TestServerViewShowsADisagreement(t *testing.T) {
	plan := behave.Plan{Seed: 6, Duration: time.Second, Populations: []behave.Population{{Name: "honest", Clients: 4, Behaviour: &behave.Honest{ConnectSpread: 50 * time.Millisecond}}}}
	p := behave.DefaultPolicy()
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Config: drive.RunConfig{Timeout: 300 * time.Millisecond}}, p)
	require.NoError(t, err)
	require.True(t, res.Server.Check.Made, res.Server.Check.Why)
	require.True(t, res.Server.Check.Agree, viewRows(res.Server.Check))

	// The same comparison on counters one of which is changed by one.
	base := server.Stats{Gate: core.GateStats{}, Populations: map[string]server.PopulationStats{}}
	end := server.Stats{
		Gate: core.GateStats{Kinds: []core.KindStats{{Name: "move"}}},
		Populations: map[string]server.PopulationStats{"honest": {Channels: map[string]server.ChannelStats{
			"move": {Accepted: 10, Dropped: map[string]uint64{"ChannelLimit": 2}},
		}}},
	}
	end.Gate.Kinds[0].Counts[core.None] = 10
	end.Gate.Kinds[0].Counts[core.ChannelLimit] = 2
	v := &record.ViewReads{Policy: &p, Labels: []string{"honest"}, Base: base}
	ck := v.Check(end, true)
	require.True(t, ck.Made)
	assert.True(t, ck.Agree, viewRows(ck))
	for _, off := range []func(){
		func() { end.Gate.Kinds[0].Counts[core.None]-- },
		func() { end.Gate.Kinds[0].Counts[core.ChannelLimit]++ },
	} {
		saved := end.Gate.Kinds[0].Counts
		off()
		ck := v.Check(end, true)
		assert.False(t, ck.Agree, viewRows(ck))
		end.Gate.Kinds[0].Counts = saved
	}
	// A ByteLimit the server counts per frame is shown, not compared.
	end.Populations["honest"].Channels["move"].Dropped["ByteLimit"] = 5
	ck = v.Check(end, true)
	assert.True(t, ck.Agree, viewRows(ck))
	// QueueFull of the server's own is a message the gate accepted.
	end.Populations["honest"].Channels["move"].Dropped["QueueFull"] = 1
	end.Gate.Kinds[0].Counts[core.None]++
	ck = v.Check(end, true)
	assert.True(t, ck.Agree, viewRows(ck))
	// Frames before a Hello are the gate's too.
	end.Populations[server.PopulationNone] = server.PopulationStats{Channels: map[string]server.ChannelStats{"(unknown)": {Dropped: map[string]uint64{"Malformed": 3}}}}
	ck = v.Check(end, true)
	assert.False(t, ck.Agree, viewRows(ck))
	end.Gate.Kinds = append(end.Gate.Kinds, core.KindStats{Name: "(unknown)"})
	end.Gate.Kinds[1].Counts[core.Malformed] = 3
	ck = v.Check(end, true)
	assert.True(t, ck.Agree, viewRows(ck))
	// Not made when the run did not end quiescent.
	assert.False(t, v.Check(end, false).Made)
}
