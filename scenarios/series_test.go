package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/reports"
)

// A population's time series and its summary are two views of the same
// response times: the series' histograms of the measured window (the
// intervals after the warm-up), merged, hold the values the kinds'
// response-time histograms hold, and their p50 and p99 agree with the
// summary's to the series' precision (two significant digits; values
// below 256 ns exact). In the quickstart most replies come in the same
// virtual instant as their request, so honest p50s are 0: in the summary
// and, per interval, in the series (no interval reports the top of a
// sub-microsecond bucket, 511 ns, for them).
func TestSeriesAgreeWithSummary(t *testing.T) {
	s, err := Load("quickstart.yaml")
	require.NoError(t, err)
	out, err := Run(context.Background(), s, Options{Policy: "balanced"})
	require.NoError(t, err)
	res := out.Results
	v := res.Variants[0]
	zeroP50 := 0
	for _, p := range v.Populations {
		var measured []*reports.Histogram
		for _, iv := range p.Series {
			if iv.Responses == 0 {
				continue
			}
			h := &reports.Histogram{HDR: iv.HDR}
			d, err := h.Decode()
			require.NoError(t, err)
			q := reports.Percentiles(d)
			assert.Equal(t, q.P50, iv.P50, "%s at %v: p50 is its histogram's", p.Name, iv.Start)
			assert.Equal(t, q.P99, iv.P99, "%s at %v: p99 is its histogram's", p.Name, iv.Start)
			if d.Max() == 0 {
				assert.Zero(t, iv.P50, "%s at %v: every response was 0", p.Name, iv.Start)
				assert.Zero(t, iv.P99, "%s at %v: every response was 0", p.Name, iv.Start)
			}
			if iv.Start >= res.Run.Warmup {
				measured = append(measured, h)
			}
			if iv.P50 == 0 && p.Name == "honest" {
				zeroP50++
			}
		}
		var kinds []*reports.Histogram
		for k := range p.MessageKinds() {
			kinds = append(kinds, k.ResponseTime)
		}
		series, err := reports.MergeHistograms(measured...)
		require.NoError(t, err)
		summary, err := reports.MergeHistograms(kinds...)
		require.NoError(t, err)
		if summary == nil {
			assert.Nil(t, series, p.Name)
			continue
		}
		require.NotNil(t, series, p.Name)
		assert.Equal(t, summary.TotalCount(), series.TotalCount(), "%s: the series count the summary's responses", p.Name)
		sq := reports.Percentiles(series)
		for _, c := range []struct {
			name         string
			series, want int64
		}{{"p50", sq.P50, p.Summary.ResponseP50}, {"p99", sq.P99, p.Summary.ResponseP99}} {
			assert.GreaterOrEqual(t, c.series, c.want, "%s %s", p.Name, c.name)
			assert.LessOrEqual(t, c.series, c.want+c.want/100, "%s %s: the series' %d within 1%% of the summary's %d", p.Name, c.name, c.series, c.want)
		}
	}
	assert.Zero(t, v.Population("honest").Summary.ResponseP50, "honest p50")
	assert.Positive(t, zeroP50, "honest intervals whose p50 is 0")
}
