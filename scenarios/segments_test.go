package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// segmentDuration shortens each scenario in TestSegmentsMergeToTheWholeRun
// (windows and ramps scale with it): exactness does not need the length.
const segmentDuration = 6 * time.Second

// sharesKeys reports whether a scenario's clients share server state
// that a sim segment does not: an address or account group, which then
// connects from several generators at once (see behave.Segment), or the
// server's bounded tables, which key churn fills and each segment's
// simulated server has its own of.
func sharesKeys(s *Scenario) bool {
	for _, p := range s.Population {
		if p.PerAddress > 1 || p.PerAccount > 1 || p.Behaviour == "key-churn" {
			return true
		}
	}
	return false
}

// The N = 1 to 4 segments of every shipped scenario's sim run merge to
// exactly the counts, bytes, histograms, series, disconnects, lockouts
// and cut-offs of one run of the whole, and to its thresholds' outcome,
// wherever clients do not share keys; where they do (a NAT crowd, split
// over generators), every client is still run exactly once.
func TestSegmentsMergeToTheWholeRun(t *testing.T) {
	for _, f := range shipped(t) {
		t.Run(f, func(t *testing.T) {
			s, err := Load(f)
			require.NoError(t, err)
			if slices.ContainsFunc(s.Population, func(p Population) bool { return p.Behaviour == traceBehaviour }) {
				_, err := s.Check(Options{Driver: DriverSim, Segment: behave.Segment{Index: 0, Of: 2}})
				var oe *OptionError
				require.ErrorAs(t, err, &oe, "a trace replay is not split into segments")
				assert.Equal(t, "segment", oe.Option)
				return
			}
			opt := Options{Driver: DriverSim, Duration: segmentDuration}
			if _, err := s.Check(opt); err != nil {
				opt.Duration = 0
			}
			whole, err := Run(context.Background(), s, opt)
			require.NoError(t, err)
			for n := 1; n <= 4; n++ {
				var rs []*reports.Results
				var names []string
				for i := range n {
					o := opt
					o.Segment = behave.Segment{Index: i, Of: n}
					out, err := Run(context.Background(), s, o)
					require.NoError(t, err)
					rs = append(rs, out.Results)
					names = append(names, fmt.Sprintf("seg%d.json", i))
				}
				merged, err := MergeSegments(rs, names)
				require.NoError(t, err, "%d segments", n)
				if sharesKeys(s) {
					for vi, v := range whole.Results.Variants {
						for pi, p := range v.Populations {
							assert.Equal(t, p.Clients, merged.Results.Variants[vi].Populations[pi].Clients)
						}
					}
					continue
				}
				assert.Equal(t, whole.Passed, merged.Passed, "%d segments", n)
				sameMeasurements(t, whole.Results, merged.Results, fmt.Sprintf("%d segments", n))
			}
		})
	}
}

// sameMeasurements checks that b measured what a did.
func sameMeasurements(t *testing.T, a, b *reports.Results, what string) {
	t.Helper()
	require.Len(t, b.Variants, len(a.Variants))
	for vi, av := range a.Variants {
		bv := b.Variants[vi]
		for ti, th := range av.Thresholds {
			assert.Equal(t, th.Pass, bv.Thresholds[ti].Pass, "%s: %s: %s", what, av.Name, th.Expr)
		}
		for pi, ap := range av.Populations {
			bp := bv.Populations[pi]
			where := what + ": " + av.Name + "/" + ap.Name
			assert.Equal(t, ap.Clients, bp.Clients, where)
			assert.Equal(t, ap.Summary.Sent, bp.Summary.Sent, where)
			assert.Equal(t, ap.Summary.NotSent, bp.Summary.NotSent, where)
			assert.Equal(t, ap.Summary.Accepted, bp.Summary.Accepted, where)
			assert.Equal(t, ap.Summary.FalseDisconnects, bp.Summary.FalseDisconnects, where)
			assert.Equal(t, ap.Summary.FalseLockouts, bp.Summary.FalseLockouts, where)
			assert.Equal(t, ap.Summary.CutOff, bp.Summary.CutOff, where)
			require.Len(t, bp.Kinds, len(ap.Kinds), where)
			for _, ak := range ap.Kinds {
				bk := bp.Kind(ak.Kind)
				kw := where + "/" + ak.Kind
				assert.Equal(t, ak.Sent, bk.Sent, kw)
				assert.Equal(t, ak.NotSent, bk.NotSent, kw)
				assert.Equal(t, ak.Accepted, bk.Accepted, kw)
				assert.Equal(t, ak.SentBytes, bk.SentBytes, kw)
				assert.Equal(t, ak.AcceptedBytes, bk.AcceptedBytes, kw)
				assert.Equal(t, ak.Drops, bk.Drops, kw)
				for _, m := range []reports.Metric{reports.ResponseTime, reports.ServiceTime, reports.SendLag} {
					ah, bh := ak.Histogram(m), bk.Histogram(m)
					if ah == nil {
						assert.Nil(t, bh, kw)
						continue
					}
					require.NotNil(t, bh, "%s: %s", kw, m)
					assert.Equal(t, ah.Count, bh.Count, "%s: %s", kw, m)
					assert.Equal(t, ah.Quantiles, bh.Quantiles, "%s: %s", kw, m)
					assert.Equal(t, ah.Min, bh.Min, "%s: %s", kw, m)
					assert.InDelta(t, ah.Mean, bh.Mean, 1e-6*max(1, ah.Mean), "%s: %s", kw, m)
				}
			}
			require.Len(t, bp.Series, len(ap.Series), where)
			for i, ai := range ap.Series {
				bi := bp.Series[i]
				assert.Equal(t, ai.Sent, bi.Sent, "%s: series[%d]", where, i)
				assert.Equal(t, ai.NotSent, bi.NotSent, "%s: series[%d]", where, i)
				assert.Equal(t, ai.Accepted, bi.Accepted, "%s: series[%d]", where, i)
				assert.Equal(t, len(ai.Drops), len(bi.Drops), "%s: series[%d]", where, i)
				for r, n := range ai.Drops {
					assert.Equal(t, n, bi.Drops[r], "%s: series[%d] %s", where, i, r)
				}
				assert.Equal(t, ai.Responses, bi.Responses, "%s: series[%d]", where, i)
				assert.Equal(t, ai.P99, bi.P99, "%s: series[%d]", where, i)
			}
		}
	}
}

// Merge refuses what is not the segments of one run, naming the file and
// why: another scenario, seed or version, segments of another count, a
// segment given twice or missing, a whole run.
func TestMergeRefusesWhatIsNotOneRun(t *testing.T) {
	s, err := Load("honest-only.yaml")
	require.NoError(t, err)
	run := func(i, n int, seed uint64) *reports.Results {
		out, err := Run(context.Background(), s, Options{Driver: DriverSim, Duration: 2 * time.Second, Seed: &seed, Segment: behave.Segment{Index: i, Of: n}})
		require.NoError(t, err)
		return out.Results
	}
	a, b, c := run(0, 3, 1), run(1, 3, 1), run(2, 3, 1)
	versioned := run(2, 3, 1)
	versioned.Environment.SluiceVersion = "v9"
	other := run(2, 3, 1)
	other.Run.Scenario, other.Run.ScenarioSHA256 = "other", "ff"
	for _, tc := range []struct {
		rs   []*reports.Results
		want string
	}{
		{[]*reports.Results{a, b, run(2, 3, 2)}, "c.json: has seed 2, a.json has 1"},
		{[]*reports.Results{a, b, versioned}, `c.json: was written by sluice "v9"`},
		{[]*reports.Results{a, b, other}, `c.json: is of scenario "other"`},
		{[]*reports.Results{a, b, run(1, 2, 1)}, "c.json: is segment 1/2, of 2 segments; a.json is of 3"},
		{[]*reports.Results{a, b, b}, "c.json: is segment 1/3, as b.json is"},
		{[]*reports.Results{a, b}, "segment 2/3 missing: 2 of 3 given"},
	} {
		names := []string{"a.json", "b.json", "c.json"}[:len(tc.rs)]
		_, err := MergeSegments(tc.rs, names)
		require.Error(t, err)
		assert.ErrorIs(t, err, reports.ErrMerge)
		assert.Contains(t, err.Error(), tc.want)
	}
	whole, err := Run(context.Background(), s, Options{Driver: DriverSim, Duration: 2 * time.Second})
	require.NoError(t, err)
	_, err = MergeSegments([]*reports.Results{whole.Results, b, c}, []string{"a.json", "b.json", "c.json"})
	assert.ErrorContains(t, err, "a.json: is not a segment's results")
	assert.True(t, strings.Contains(err.Error(), "--segment"))
}
