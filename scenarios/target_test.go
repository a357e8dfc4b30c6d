package scenarios

import (
	"math"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoVariants = `name: two
seed: 1
duration: 2s
policy_file: policies/game.yaml
variants:
  - name: a
  - name: b
    set: {account: {rate: 10, burst: 20}}
populations:
  - name: honest
    behaviour: honest
    count: 2
thresholds:
  - honest.drop_rate < 1%
  - honest.chat.drop_rate < 1%
  - honest.false_disconnects == 0
`

// A target is HOST:PORT, driven over sockets, under one variant: each
// way of asking for something else is refused before anything runs,
// naming the option or the field at fault.
func TestTargetIsRefusedWhereItCannotRun(t *testing.T) {
	s, err := Parse([]byte(twoVariants), "two.yaml")
	require.NoError(t, err)
	for _, c := range []struct {
		opt    Options
		option string
		msg    string
	}{
		{Options{Target: "127.0.0.1"}, "target", "not HOST:PORT"},
		{Options{Target: ":7777"}, "target", "names no host"},
		{Options{Target: "127.0.0.1:0"}, "target", "port must be"},
		{Options{Target: "127.0.0.1:7777", Driver: DriverSim}, "driver", "sim cannot drive a target"},
		{Options{Target: "127.0.0.1:7777"}, "policy", "name the variant it runs (one of [a b])"},
	} {
		_, err := s.Check(c.opt)
		var oe *OptionError
		require.ErrorAs(t, err, &oe, "%+v", c.opt)
		assert.Equal(t, c.option, oe.Option, "%+v", c.opt)
		assert.Contains(t, oe.Msg, c.msg, "%+v", c.opt)
	}
	vs, err := s.Check(Options{Target: "127.0.0.1:7777", Policy: "b"})
	require.NoError(t, err)
	require.Len(t, vs, 1)

	_, err = Parse([]byte(strings.Replace(twoVariants, "seed: 1\n", "seed: 1\ntarget: nowhere\n", 1)), "two.yaml")
	assert.ErrorContains(t, err, "two.yaml:3:9: target")
	_, err = Parse([]byte(strings.Replace(twoVariants, "seed: 1\n", "seed: 1\ndriver: sim\ntarget: 127.0.0.1:7777\n", 1)), "two.yaml")
	assert.ErrorContains(t, err, "driver")
	in, err := Parse([]byte(strings.Replace(twoVariants, "seed: 1\n", "seed: 1\ntarget: 127.0.0.1:7777\n", 1)), "two.yaml")
	require.NoError(t, err)
	assert.Equal(t, DriverLoopback, in.Driver, "a target is driven over sockets")
}

// On a target run, a threshold over inputs' fates is listed as not
// measured, neither passed nor failed; one over requests (their replies
// say) or over what the clients saw is evaluated; the same results with
// no target would have failed it.
func TestTargetThresholdsNotMeasured(t *testing.T) {
	s, err := Parse([]byte(twoVariants), "two.yaml")
	require.NoError(t, err)
	res := reports.New(reports.Run{Scenario: "two", Driver: DriverLoopback, Duration: 2e9, Target: "127.0.0.1:7777"}, reports.Environment{})
	v, err := res.AddVariant("a", nil)
	require.NoError(t, err)
	p := v.AddPopulation("honest", "honest", reports.Honest, 2)
	mv := p.Kind("move")
	mv.Sent, mv.Unknown = 100, 100
	ch := p.Kind("chat")
	ch.Sent, ch.Accepted = 10, 10
	require.NoError(t, res.Finalize())
	assert.True(t, s.Evaluate(res, v))
	assert.Len(t, v.Thresholds, 2)
	require.Len(t, v.NotApplicable, 1)
	assert.Contains(t, v.NotApplicable[0], "honest.drop_rate < 1%: drop_rate needs what the server decided on 100 inputs")
	assert.Nil(t, p.Summary.DropRate)
	assert.Equal(t, reports.NoRateUnknown, p.Summary.NoDropRate)
	assert.True(t, math.IsNaN(MetricValue(res, v, "honest", "", "drop_rate")))

	res.Run.Target = ""
	assert.False(t, s.Evaluate(res, v), "without a target, an unknown fate fails the threshold as not measured")
	assert.Empty(t, v.NotApplicable)
}
