package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/reports"
)

// Accepted bytes are the accepted share of the frames a kind wrote, not of
// every frame it meant to send: once flooders are cut off most of their
// sends are never written (NotSent) and add no bytes. Byte-flood frames
// are all one size, so the estimate is exact there.
func TestAcceptedBytesAreTheAcceptedShareOfFramesWritten(t *testing.T) {
	s, err := Load("flood-mix.yaml")
	require.NoError(t, err)
	out, err := Run(context.Background(), s, Options{})
	require.NoError(t, err)
	p := out.Results.Variants[0].Population("bytes")
	require.NotNil(t, p)
	var move *reports.KindStats
	for _, k := range p.Kinds {
		if k.Kind == "move" {
			move = k
		}
	}
	require.NotNil(t, move)
	require.Positive(t, move.NotSent, "the setup leaves frames unwritten")
	require.Positive(t, move.Accepted)
	const frame = 4095 // every byte-flood frame: wire.DefaultMaxFrame − 1
	assert.Equal(t, move.Accepted*frame, move.AcceptedBytes)
}

// lockouts and false_disconnects are measured for honest clients only: on
// a hostile population they have no value, so "tiny.lockouts == 0" fails
// instead of passing on a 0 nobody counted.
func TestHostileLockoutsHaveNoValue(t *testing.T) {
	s, err := Load("flood-mix.yaml")
	require.NoError(t, err)
	s.thresholds = nil
	for _, text := range []string{"tiny.lockouts == 0", "tiny.false_disconnects == 0", "all.lockouts == 0"} {
		th, err := ParseThreshold(text)
		require.NoError(t, err)
		s.thresholds = append(s.thresholds, th)
	}
	out, err := Run(context.Background(), s, Options{})
	require.NoError(t, err)
	th := out.Results.Variants[0].Thresholds
	require.Len(t, th, 3)
	assert.False(t, th[0].Pass, "tiny.lockouts: %v", th[0].Value)
	assert.True(t, math.IsNaN(th[0].Value))
	assert.False(t, th[1].Pass, "tiny.false_disconnects: %v", th[1].Value)
	assert.True(t, th[2].Pass, "all.lockouts counts the honest populations: %v", th[2].Value)
}

// cutoff_max and cutoff_p50 are over every client of the population: one
// never cut off counts as never, so catching one flooder of ten does not
// pass "cutoff_max < 2s".
func TestCutOffMetricsCountClientsNeverCutOff(t *testing.T) {
	value := func(times []time.Duration, clients int, metric string) float64 {
		res := reports.New(reports.Run{Scenario: "t", Duration: 10 * time.Second}, reports.Environment{})
		v, err := res.AddVariant("base", nil)
		require.NoError(t, err)
		p := v.AddPopulation("flood", "tiny-flood", reports.Hostile, clients)
		p.Summary.CutOff = reports.CutOffTimes(times, clients)
		return MetricValue(res, v, "flood", "", metric)
	}
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	assert.Equal(t, math.Inf(1), value(nil, 10, "cutoff_max"), "none cut off")
	assert.Equal(t, math.Inf(1), value([]time.Duration{sec(1)}, 10, "cutoff_max"), "1 of 10 cut off")
	assert.Equal(t, math.Inf(1), value([]time.Duration{sec(1)}, 10, "cutoff_p50"), "1 of 10 cut off")
	assert.Equal(t, float64(sec(3)), value([]time.Duration{sec(1), sec(3), sec(2)}, 3, "cutoff_max"), "all cut off")
	assert.Equal(t, float64(sec(2)), value([]time.Duration{sec(1), sec(3), sec(2)}, 3, "cutoff_p50"), "all cut off")
	assert.Equal(t, float64(sec(3)), value([]time.Duration{sec(1), sec(3), sec(2)}, 5, "cutoff_p50"), "3 of 5: the median of 1, 2, 3, never, never")
}

// natTight puts a NAT crowd behind an address budget too small for it.
const natTight = `name: nat-tight
seed: 16
duration: 10s
warmup: 2s
policy_file: policies/game.yaml
variants:
  - name: tight
    set:
      address: {rate: 1, burst: 5}
populations:
  - name: crowd
    behaviour: honest
    count: 40
    per_address: 40
    arrival: {kind: ramp, over: 6s}
thresholds:
  - crowd.drops.AddressLimit == 0
`

// Logins the gate refuses at Open (by address, before the server reads the
// Hello) count as hellos dropped with the refusal's reason, in both
// drivers: every hello ends accepted or dropped, and the threshold meant
// to catch a crowd refused by its address budget does.
func TestOpenRefusalsAreHelloDrops(t *testing.T) {
	s, err := Parse([]byte(natTight), "nat-tight.yaml")
	require.NoError(t, err)
	for _, o := range []Options{{Driver: "sim"}, {Driver: "loopback", Duration: 4 * time.Second}} {
		out, err := Run(context.Background(), s, o)
		require.NoError(t, err, o.Driver)
		v := out.Results.Variants[0]
		var hello *reports.KindStats
		for _, k := range v.Populations[0].Kinds {
			if k.Kind == "hello" {
				hello = k
			}
		}
		require.NotNil(t, hello, o.Driver)
		assert.Positive(t, hello.Drops["AddressLimit"], "%s: hello drops %v", o.Driver, hello.Drops)
		assert.Equal(t, hello.Sent, hello.Accepted+hello.Dropped(), "%s: every hello ends accepted or dropped", o.Driver)
		require.Len(t, v.Thresholds, 1)
		assert.False(t, v.Thresholds[0].Pass, "%s: %s measured %v", o.Driver, v.Thresholds[0].Expr, v.Thresholds[0].Value)
	}
}

// A kind's Sent counts frames held when the run ended (in flight), but no
// drop does; NotSent is neither sent nor a drop: a count of its own.
func TestHeldAtEndIsSentButNotDropped(t *testing.T) {
	var server, client [record.NumOutcomes]int64
	server[record.Accepted] = 2
	client[record.Sent] = 2
	client[record.HeldAtEnd] = 3
	client[record.NotSent] = 1
	ks := &reports.KindStats{}
	fillKind(ks, server, client, false)
	assert.Equal(t, int64(5), ks.Sent)
	assert.Equal(t, int64(1), ks.NotSent)
	assert.Equal(t, int64(2), ks.Accepted)
	assert.Empty(t, ks.Drops)
}

// A variant cut short says how far it got (Stopped, and an invalid note),
// and its measured window is what it measured: here nothing, as it was
// stopped before its warm-up ended.
func TestInterruptedVariantSaysHowFarItGot(t *testing.T) {
	s, err := Load("quickstart.yaml")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled as the first variant ends: the second stops at once.
	out, err := Run(ctx, s, Options{Progress: func(_ string, _, _ int, done, total time.Duration) {
		if done == total {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, out)
	require.False(t, out.Results.Run.Complete)
	require.Len(t, out.Results.Variants, 2)
	assert.Zero(t, out.Results.Variants[0].Stopped, "the first variant ran to its end")
	v := out.Results.Variants[1]
	require.Positive(t, v.Stopped)
	require.Less(t, v.Stopped, s.Duration)
	require.Len(t, v.Invalid, 1)
	assert.Contains(t, v.Invalid[0], "the run stopped ")
	assert.Zero(t, out.Results.MeasuredOf(v), "stopped before the end of its warm-up: nothing measured")
}

// The sessions the server ended are recorded by reason in the session row,
// and no message total counts them: a population's sent, dropped and drop
// rate are over messages only. A threshold can still name the row.
func TestSessionEndsAreNotMessages(t *testing.T) {
	s, err := Load("flood-mix.yaml")
	require.NoError(t, err)
	out, err := Run(context.Background(), s, Options{})
	require.NoError(t, err)
	r, v := out.Results, out.Results.Variants[0]
	ends := 0
	for _, p := range v.Populations {
		var sent, dropped int64
		for _, k := range p.Kinds {
			if k.IsSessions() {
				ends++
				assert.Positive(t, k.Sent, p.Name)
				assert.Equal(t, k.Sent, k.Dropped(), "%s: every session end has its reason", p.Name)
				assert.Equal(t, float64(k.Drops["Lockout"]), MetricValue(r, v, p.Name, "session", "drops.Lockout"), p.Name)
				continue
			}
			sent += k.Sent
			dropped += k.Dropped()
		}
		assert.Equal(t, sent, p.Summary.Sent, p.Name)
		assert.Equal(t, dropped, p.Summary.Dropped, p.Name)
		// A threshold's sent is what was scheduled, as before not_sent
		// was counted apart.
		assert.Equal(t, float64(p.Summary.Scheduled), MetricValue(r, v, p.Name, "", "sent"), p.Name)
	}
	assert.Positive(t, ends, "the attackers' sessions were ended")
}

// lateFlood's second flooder arrives at the end of the run (a ramp over
// twice its length), so it never dials and never sends.
const lateFlood = `name: late-flood
seed: 1
duration: 6s
driver: sim
policy_file: policies/game.yaml
populations:
  - name: flood
    behaviour: tiny-flood
    count: 2
    arrival: {kind: ramp, over: 12s}
thresholds:
  - flood.cutoff_max < 3s
`

// A hostile client that never arrived in the run had nothing to be cut off
// from: the cut-off measures are over the clients that took part, and one
// that never dialled does not make cutoff_max "never".
func TestCutOffsCountOnlyClientsThatTookPart(t *testing.T) {
	s, err := Parse([]byte(lateFlood), "late-flood.yaml")
	require.NoError(t, err)
	plan := s.plan()
	clients := plan.Clients()
	require.Len(t, clients, 2)
	assert.NotEmpty(t, behave.Collect(clients[0].Stream(), 1), "the first flooder acts")
	assert.Empty(t, behave.Collect(clients[1].Stream(), 1), "the second arrives at the end: no action at all")
	out, err := Run(context.Background(), s, Options{})
	require.NoError(t, err)
	p := out.Results.Variants[0].Population("flood")
	require.NotNil(t, p.Summary.CutOff)
	assert.Equal(t, 2, p.Clients, "the population's size is the plan's")
	assert.Equal(t, 1, p.Summary.CutOff.Clients)
	assert.Equal(t, 1, p.Summary.CutOff.Of, "one flooder took part")
	th := out.Results.Variants[0].Thresholds
	require.Len(t, th, 1)
	assert.True(t, th[0].Pass, "%s measured %v", th[0].Expr, th[0].Value)
}

// A duration given as an option that stretches a ramp past the longest run
// is that option's error, named as such, not the file's.
func TestDurationOptionBreakingABoundIsTheOptions(t *testing.T) {
	s, err := Parse([]byte(lateFlood), "late-flood.yaml")
	require.NoError(t, err)
	_, err = Run(context.Background(), s, Options{Duration: 24 * time.Hour})
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "duration", oe.Option)
	assert.Contains(t, oe.Msg, "24h0m0s: ")
	assert.Contains(t, oe.Msg, "Arrival.Over")
}

// A bound the scenario breaks at its own duration is the file's error,
// even when a duration is given as an option: the option did not cause it.
func TestDurationOptionDoesNotTakeTheFilesError(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: crowd\nseed: 1\nduration: 6s\ndriver: sim\npolicy_file: policies/game.yaml\npopulations:\n")
	for i := range 11 {
		fmt.Fprintf(&b, "  - name: h%d\n    behaviour: honest\n    count: 100000\n", i)
	}
	s, err := Parse([]byte(b.String()), "crowd.yaml")
	require.NoError(t, err)
	_, err = Run(context.Background(), s, Options{Duration: 2 * time.Second})
	require.Error(t, err)
	var oe *OptionError
	assert.False(t, errors.As(err, &oe), "blamed on an option: %v", err)
	assert.Contains(t, err.Error(), "crowd.yaml")
}
