package scenarios

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/reports"
)

// rawUnits runs two populations that write raw bytes beside honest
// players: malformed frames four to a write, and a slowloris dribbling a
// Hello a byte at a time. No warm-up, so that every write counts.
const rawUnits = `name: raw-units
seed: 5
duration: 3s
policy_file: policies/game.yaml
populations:
  - name: honest
    behaviour: honest
    count: 4
  - name: bad
    behaviour: malformed
    count: 2
    params: {frames_per_write: 4, every: 20ms}
  - name: slow
    behaviour: slowloris
    count: 2
    params: {every: 20ms}
thresholds:
  - honest.drop_rate == 0
  - bad.hello.drop_rate <= 100%
`

func kindOf(p *reports.Population, name string) *reports.KindStats {
	for _, k := range p.Kinds {
		if k.Kind == name {
			return k
		}
	}
	return nil
}

func TestRawSendsAreWritesWithNoDropRate(t *testing.T) {
	s, err := Parse([]byte(rawUnits), "raw-units.yaml")
	require.NoError(t, err)
	// Every OpRaw action is one write, carried out and given one outcome.
	plan := s.plan()
	writes := map[string]int64{}
	for _, c := range plan.Clients() {
		for _, a := range behave.Collect(c.Stream(), 1<<20) {
			if a.Op == behave.OpRaw && a.At < c.End {
				writes[plan.Populations[c.Population].Name]++
			}
		}
	}
	for _, o := range []Options{{Driver: "sim"}, {Driver: "loopback"}} {
		out, err := Run(context.Background(), s, o)
		require.NoError(t, err, o.Driver)
		r, v := out.Results, out.Results.Variants[0]
		for _, name := range []string{"bad", "slow"} {
			p := v.Population(name)
			raw := kindOf(p, "raw")
			require.NotNil(t, raw, "%s %s", o.Driver, name)
			var frames int64 = raw.Accepted
			for reason, n := range raw.Drops {
				if reason != "NotSent" && reason != "Disconnected" {
					frames += n
				}
			}
			t.Logf("%s %s: %d writes planned, raw sent %d, frames decided %d, drops %v", o.Driver, name, writes[name], raw.Sent, frames, raw.Drops)
			if o.Driver == "sim" {
				assert.Equal(t, writes[name], raw.Sent+raw.NotSent, "%s %s: raw sent and not sent count writes", o.Driver, name)
			} else {
				// A loopback worker that wakes past the end of the run
				// does not carry out the actions due just before it: a
				// few writes may be missing, never added.
				assert.LessOrEqual(t, raw.Sent+raw.NotSent, writes[name], "%s %s: raw sent and not sent count writes", o.Driver, name)
				assert.GreaterOrEqual(t, raw.Sent+raw.NotSent, writes[name]-10, "%s %s: raw sent and not sent count writes", o.Driver, name)
			}
			assert.Nil(t, p.Summary.DropRate, "%s %s", o.Driver, name)
			assert.Equal(t, reports.NoRateRaw, p.Summary.NoDropRate, "%s %s", o.Driver, name)
			assert.True(t, math.IsNaN(MetricValue(r, v, name, "", "drop_rate")), "%s %s", o.Driver, name)
			assert.True(t, math.IsNaN(MetricValue(r, v, name, "", "limited_rate")), "%s %s", o.Driver, name)
		}
		assert.NotNil(t, v.Population("honest").Summary.DropRate, o.Driver)
		require.Len(t, v.Thresholds, 2)
		assert.False(t, math.IsNaN(v.Thresholds[1].Value), "%s: a kind of message of a raw population has a rate", o.Driver)
	}
}

// A threshold on a share over a population that writes raw bytes, or
// over the raw row, is refused before anything runs, naming the
// population and why; a share over one of its kinds of message, and the
// counts, are not.
func TestRawDropRateThresholdsAreRefused(t *testing.T) {
	base := strings.SplitAfter(rawUnits, "thresholds:\n")[0]
	for _, c := range []struct{ threshold, want string }{
		{"slow.drop_rate < 50%", `raw-units.yaml:18:5: thresholds[0]: drop_rate has no value: population "slow" (slowloris) writes raw bytes, counted in writes when sent and in frames when the server decides them; name a kind of message sent (slow.<kind>.drop_rate, such as hello for a population that logs in), or use dropped, drops.<reason> or admitted_per_s`},
		{"all.limited_rate < 1", `limited_rate has no value: populations "bad" (malformed), "slow" (slowloris) write raw bytes`},
		{"slow.raw.drop_rate < 1", `drop_rate has no value on the raw row: raw bytes are counted in writes when sent and in frames when the server decides them`},
		{"bad.raw.limited_rate < 1", `limited_rate has no value on the raw row`},
	} {
		_, err := Parse([]byte(base+"  - "+c.threshold+"\n"), "raw-units.yaml")
		if assert.Error(t, err, c.threshold) {
			assert.Contains(t, err.Error(), c.want, c.threshold)
		}
	}
	for _, ok := range []string{"slow.hello.drop_rate < 1", "honest.drop_rate == 0", "bad.raw.sent > 0", "slow.dropped > 0", "all.drops.Malformed >= 0", "bad.admitted_per_s < 5"} {
		_, err := Parse([]byte(base+"  - "+ok+"\n"), "raw-units.yaml")
		assert.NoError(t, err, ok)
	}
}

// Past the parser (results from elsewhere), a share over raw writes has
// no value: the threshold fails rather than divide frames by writes.
func TestRawDropRateHasNoValue(t *testing.T) {
	res := reports.New(reports.Run{Scenario: "t", Duration: 10 * time.Second}, reports.Environment{})
	v, err := res.AddVariant("base", nil)
	require.NoError(t, err)
	p := v.AddPopulation("slow", "slowloris", reports.Hostile, 4)
	raw := p.Kind("raw")
	raw.Sent = 129
	raw.Drops = map[string]int64{"NotSent": 5, "Oversize": 6, "Malformed": 5}
	hello := p.Kind("hello")
	hello.Sent, hello.Accepted = 10, 8
	hello.Drops = map[string]int64{"Lockout": 2}
	for _, kind := range []string{"", "raw"} {
		for _, m := range []string{"drop_rate", "limited_rate"} {
			assert.True(t, math.IsNaN(MetricValue(res, v, "slow", kind, m)), "slow.%s.%s", kind, m)
			assert.True(t, math.IsNaN(MetricValue(res, v, "all", kind, m)), "all.%s.%s", kind, m)
		}
	}
	assert.Equal(t, 0.2, MetricValue(res, v, "slow", "hello", "drop_rate"))
	assert.Equal(t, 139.0, MetricValue(res, v, "slow", "", "sent"))
	s := &Scenario{}
	th, err := ParseThreshold("slow.drop_rate < 1")
	require.NoError(t, err, "the parser alone does not know the behaviour")
	s.thresholds = []Threshold{th}
	assert.False(t, s.Evaluate(res, v))
	assert.True(t, math.IsNaN(v.Thresholds[0].Value))
}
