package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/reports"
)

// A series point that lost response times (its Dropped count) is refused
// when the results are filled, even when its histogram kept none of them:
// the results must not present an interval as complete that is not.
func TestFillRefusesAPointThatLostResponseTimes(t *testing.T) {
	s, err := Load("honest-only.yaml")
	require.NoError(t, err)
	eff, variants, plan, err := s.prepare(Options{})
	require.NoError(t, err)
	for _, kept := range []bool{true, false} {
		r, err := loadgen.RunSim(context.Background(), loadgen.RunSpec{Plan: plan, Warmup: eff.Warmup, Interval: eff.Interval}, variants[0].Policy)
		require.NoError(t, err)
		pt := &r.Series[0][len(r.Series[0])/2]
		require.NotNil(t, pt.Response, "the point has response times")
		if !kept {
			pt.Response = nil
		}
		pt.Dropped = 1
		res := reports.New(reports.Run{Scenario: eff.Name, Driver: reports.DriverSim, Duration: eff.Duration}, reports.Environment{})
		v, err := res.AddVariant(variants[0].Name, nil)
		require.NoError(t, err)
		require.ErrorContains(t, fill(v, eff, r), "1 response times outside the series' histogram", "histogram kept: %v", kept)
	}
}
