package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stopAfter is a context cancelled once Err has been asked n times.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A variant stopped part-way has a time series only up to where it
// stopped: no interval starts at or after its stop, the last one ends
// there, and the series still holds every count it measured.
func TestStoppedVariantSeriesEndsWhereItStopped(t *testing.T) {
	s, err := Load("quickstart.yaml")
	require.NoError(t, err)
	// The sim checks its context every 256 polls: stopped after a fixed
	// number of checks, it stops at the same virtual time on every run.
	out, err := Run(&stopAfter{Context: context.Background(), n: 40}, s, Options{Driver: "sim", Policy: "balanced"})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, out)
	v := out.Results.Variants[0]
	require.Positive(t, v.Stopped)
	require.Less(t, v.Stopped, s.Duration)
	for _, p := range v.Populations {
		require.NotEmpty(t, p.Series, p.Name)
		for _, iv := range p.Series {
			assert.Less(t, iv.Start, v.Stopped, "%s: an interval at %v, after the stop at %v", p.Name, iv.Start, v.Stopped)
			assert.LessOrEqual(t, iv.Start+iv.Length, v.Stopped, "%s: the interval at %v ends at %v, after the stop at %v", p.Name, iv.Start, iv.Start+iv.Length, v.Stopped)
		}
		last := p.Series[len(p.Series)-1]
		assert.Equal(t, v.Stopped, last.Start+last.Length, "%s: the series ends where the run stopped", p.Name)
		// Past the warm-up (2s, a whole number of intervals), the series
		// accepted what the kinds did.
		var acc int64
		for _, iv := range p.Series {
			if iv.Start >= s.Warmup {
				acc += iv.Accepted
			}
		}
		assert.Equal(t, p.Summary.Accepted, acc, p.Name)
	}
}
