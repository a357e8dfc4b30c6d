package reports

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// targetResults is a run against a server sluice did not start: inputs
// with unknown fates, requests decided by their replies.
func targetResults(t *testing.T) *Results {
	t.Helper()
	r := New(Run{Scenario: "t", Driver: "loopback", Seed: 1, Duration: 2e9, Target: "127.0.0.1:7777", Complete: true}, Environment{})
	v, err := r.AddVariant("balanced", nil)
	require.NoError(t, err)
	p := v.AddPopulation("honest", "honest", Honest, 2)
	mv := p.Kind("move")
	mv.Sent, mv.Unknown = 100, 100
	ch := p.Kind("chat")
	ch.Sent, ch.Accepted = 10, 9
	ch.Drop("ChannelLimit", 1)
	v.NotApplicable = []string{"honest.drop_rate < 1%: not measured"}
	require.NoError(t, r.Finalize())
	return r
}

// The target, the unknown fates and the thresholds not measured survive
// the file; a population with unknown fates has no drop rate, a kind of
// requests keeps its own; a file claiming more unknown than sent is
// refused.
func TestTargetRunRoundTrips(t *testing.T) {
	r := targetResults(t)
	p := r.Variants[0].Population("honest")
	assert.Nil(t, p.Summary.DropRate)
	assert.Equal(t, NoRateUnknown, p.Summary.NoDropRate)
	rate, ok := p.Kind("chat").DropRate()
	assert.True(t, ok)
	assert.InDelta(t, 0.1, rate, 1e-12)
	_, ok = p.Kind("move").DropRate()
	assert.False(t, ok)

	data, err := Marshal(r)
	require.NoError(t, err)
	back, err := Unmarshal(data)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7777", back.Run.Target)
	assert.Equal(t, int64(100), back.Variants[0].Population("honest").Kind("move").Unknown)
	assert.Equal(t, r.Variants[0].NotApplicable, back.Variants[0].NotApplicable)

	bad := strings.Replace(string(data), `"unknown": 100`, `"unknown": 101`, 1)
	require.NotEqual(t, string(data), bad, "the file spells the field as expected")
	_, err = Unmarshal([]byte(bad))
	assert.ErrorContains(t, err, "unknown 101 is more than sent 100")
}

// The report and its facts say what a target run measured.
func TestTargetRunReport(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteHTML(&b, targetResults(t)))
	page := b.String()
	assert.Contains(t, page, "127.0.0.1:7777, a server sluice did not start")
	assert.Contains(t, page, "not measured</span> honest.drop_rate &lt; 1%")
	assert.Contains(t, page, "Drop rate –: honest (inputs get no reply")
}
