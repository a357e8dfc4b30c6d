package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportedEffectiveRateIsTheNearestFloat64 holds LimiterReport's
// effective rate to atomicbucket's: at 30/s the fixed-point clock runs at
// 30 to the nearest float64, so the report reads 30, not 29.999999999999996.
func TestReportedEffectiveRateIsTheNearestFloat64(t *testing.T) {
	lim, err := NewLimiter(LimiterConfig{Rate: 30, Burst: 30, MaxKeys: 16})
	require.NoError(t, err)
	defer lim.Close()
	assert.Equal(t, 30.0, lim.Report().EffectiveRate)
}
