package loadgen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The series' response histograms resolve what the recorder's do near
// zero: an interval whose replies all came at once (a sim's ping, answered
// in the same virtual instant) has a p50 and p99 of 0, not the top of a
// microsecond-wide first bucket (511 ns), and a sub-microsecond value is
// reported to the series' two significant digits, not as 1023 ns.
func TestSeriesResolveSubMicrosecond(t *testing.T) {
	rec, err := NewRecorder([]string{"p"}, HistConfig{})
	require.NoError(t, err)
	w, err := NewWorker(&lateDriver{}, rec, nil, RunConfig{})
	require.NoError(t, err)
	sec := int64(time.Second)
	w.series, w.acc = newSeries(1, sec, 3*sec), make([]Interval, 1)

	for range 10 {
		w.record(0, 0, KindPing, Response, 0)
	}
	for range 10 {
		w.record(sec, 0, KindPing, Response, 700)
	}
	for _, v := range []int64{0, 100, 100, 255} {
		w.record(2*sec, 0, KindPing, Response, v)
	}
	w.flushSeries()
	pts := w.series.pts[0]

	zero := pts[0].Response
	require.NotNil(t, zero)
	assert.EqualValues(t, 10, zero.TotalCount())
	assert.Zero(t, zero.ValueAtQuantile(50), "p50 of zeros")
	assert.Zero(t, zero.ValueAtQuantile(99), "p99 of zeros")
	assert.Zero(t, zero.Max(), "max of zeros")

	sub := pts[1].Response
	require.NotNil(t, sub)
	for _, q := range []float64{50, 99} {
		v := sub.ValueAtQuantile(q)
		assert.GreaterOrEqual(t, v, int64(700), "p%g of 700 ns", q)
		assert.LessOrEqual(t, v, int64(707), "p%g of 700 ns: within two significant digits", q)
	}

	// Below 256 ns the series' buckets are 1 ns wide: values are exact.
	low := pts[2].Response
	require.NotNil(t, low)
	assert.EqualValues(t, 100, low.ValueAtQuantile(50))
	assert.EqualValues(t, 255, low.ValueAtQuantile(99))
	assert.EqualValues(t, 0, low.Min())
}
