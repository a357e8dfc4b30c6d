package core

import (
	"os"
	"path/filepath"
	"strings"
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

// TestLoadPolicyRefusesAFileBeyondItsBound holds LoadPolicy to refusing a
// file over MaxPolicyFileBytes, with the bound in the error.
func TestLoadPolicyRefusesAFileBeyondItsBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	doc := "channels:\n  - {name: move, class: input, rate: 30}\n" + strings.Repeat("# padding\n", MaxPolicyFileBytes/10+1)
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	_, err := LoadPolicy(path)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrPolicy)
	assert.Contains(t, err.Error(), "larger than 1048576 bytes (1 MiB)")
}
