package scenarios

import (
	"math"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// honestMoves returns the minimal scenario and results in which its honest
// population sent 100 moves, 90 accepted and 10 dropped by ChannelLimit.
func honestMoves(t *testing.T) (*Scenario, *reports.Results, *reports.Variant) {
	t.Helper()
	s, err := Parse([]byte(minimal), "t.yaml")
	require.NoError(t, err)
	res := reports.New(reports.Run{Scenario: "t", Duration: 10 * time.Second}, reports.Environment{})
	v, err := res.AddVariant("base", nil)
	require.NoError(t, err)
	k := v.AddPopulation("honest", "honest", reports.Honest, 3).Kind("move")
	k.Sent, k.Accepted = 100, 90
	k.Drops = map[string]int64{"ChannelLimit": 10}
	return s, res, v
}

// A threshold on a kind the population never sent (or a misspelt one) fails
// with NaN instead of reading zeros and passing vacuously; the same
// threshold on a kind that was sent is computed.
func TestThresholdOnUnknownKindFails(t *testing.T) {
	s, res, v := honestMoves(t)

	assert.Equal(t, 90.0, MetricValue(res, v, "honest", "move", "accepted"))
	for _, m := range []string{"sent", "accepted", "dropped", "admitted_per_s", "admitted_bytes_per_s", "drops.ChannelLimit"} {
		assert.True(t, math.IsNaN(MetricValue(res, v, "honest", "mvoe", m)), "metric %s of an unknown kind", m)
	}
	_, err := ParseThreshold("honest.mvoe.accepted <= 5")
	assert.ErrorContains(t, err, `no message kind named "mvoe" (did you mean "move"?)`)
	// Built by hand, past the parser: it still does not pass.
	s.thresholds = []Threshold{{Text: "honest.mvoe.accepted <= 5", Population: "honest", Kind: "mvoe", Metric: "accepted", Op: "<=", Value: 5}}
	assert.False(t, s.Evaluate(res, v), "a threshold on a kind nobody sent does not pass")
}

// A share of what was sent carries the fraction unit, so that reports show
// it as a percentage too; a count carries none.
func TestThresholdUnits(t *testing.T) {
	s, res, v := honestMoves(t)
	s.thresholds = nil
	for _, text := range []string{"honest.drop_rate < 0.2", "honest.limited_rate < 0.2", "honest.dropped < 20"} {
		th, err := ParseThreshold(text)
		require.NoError(t, err)
		s.thresholds = append(s.thresholds, th)
	}
	assert.True(t, s.Evaluate(res, v))
	require.Len(t, v.Thresholds, 3)
	assert.Equal(t, reports.UnitFraction, v.Thresholds[0].Unit)
	assert.InDelta(t, 0.1, v.Thresholds[0].Value, 1e-12)
	assert.Equal(t, reports.UnitFraction, v.Thresholds[1].Unit)
	assert.Empty(t, v.Thresholds[2].Unit)
}

// drops.<Reason> must name a known reason: a typo would always read 0.
func TestThresholdDropReasonIsChecked(t *testing.T) {
	_, err := ParseThreshold("crowd.drops.AdressLimit == 0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"AddressLimit"`, "with a suggestion")
	for _, ok := range []string{"crowd.drops.AddressLimit == 0", "crowd.drops.Refused == 0", "all.chat.drops.Timeout < 3", "crowd.drops.Overflow == 0"} {
		_, err := ParseThreshold(ok)
		assert.NoError(t, err, ok)
	}
}

// A percentile over kinds is computed over all of their values or not at
// all: if one kind's histogram cannot be decoded, or merging would drop
// values, the metric is NaN and its threshold fails, rather than reading
// the percentile of the rest.
func TestPercentileOverPartOfTheDataIsNaN(t *testing.T) {
	build := func(second *hdrhistogram.Histogram, corrupt bool) (*reports.Results, *reports.Variant) {
		res := reports.New(reports.Run{Scenario: "t", Duration: 10 * time.Second}, reports.Environment{})
		v, err := res.AddVariant("base", nil)
		require.NoError(t, err)
		p := v.AddPopulation("honest", "honest", reports.Honest, 3)
		wide := hdrhistogram.New(1, int64(time.Minute), 3)
		require.NoError(t, wide.RecordValue(int64(time.Millisecond)))
		require.NoError(t, p.Kind("move").AddHistogram(reports.ResponseTime, wide))
		require.NoError(t, p.Kind("chat").AddHistogram(reports.ResponseTime, second))
		if corrupt {
			p.Kind("chat").ResponseTime.HDR = "not an hdr encoding"
		}
		return res, v
	}
	same := hdrhistogram.New(1, int64(time.Minute), 3)
	require.NoError(t, same.RecordValue(int64(2*time.Millisecond)))
	res, v := build(same, false)
	assert.InDelta(t, float64(2*time.Millisecond), MetricValue(res, v, "honest", "", "p99"), float64(10*time.Microsecond), "the whole data")

	res, v = build(same, true)
	assert.True(t, math.IsNaN(MetricValue(res, v, "honest", "", "p99")), "one histogram cannot be decoded")

	// A wider range than the first kind's: the merge widens to hold it, as
	// the report's does, and the threshold sees the same p99.
	wider := hdrhistogram.New(1, int64(time.Hour), 3)
	require.NoError(t, wider.RecordValue(int64(30*time.Minute)))
	res, v = build(wider, false)
	assert.InDelta(t, float64(30*time.Minute), MetricValue(res, v, "honest", "", "p99"), float64(time.Second), "the value past the first kind's range counts")
}

// A population with no session row ended no session: a threshold that
// names the row reads 0, so "honest.session.sent == 0" passes when it holds.
func TestNoSessionRowIsZeroSessionsEnded(t *testing.T) {
	_, r, v := honestMoves(t)
	for _, m := range []string{"sent", "dropped", "drops.Lockout"} {
		assert.Equal(t, 0.0, MetricValue(r, v, "honest", reports.SessionKind, m), m)
	}
	assert.True(t, math.IsNaN(MetricValue(r, v, "honest", "chta", "sent")), "a misspelt kind still has no value")
	// Nothing on the row is accepted or timed: those metrics have no
	// value there (parsing refuses them too), rather than a 0.
	for _, m := range []string{"accepted", "drop_rate", "p99", "admitted_per_s"} {
		assert.True(t, math.IsNaN(MetricValue(r, v, "honest", reports.SessionKind, m)), m)
	}
}
