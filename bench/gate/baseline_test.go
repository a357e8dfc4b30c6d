package gate_test

import (
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/gate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed baseline is usable: the machine's facts in its header,
// at least 10 samples of every benchmark, every configured floor present,
// and it passes against itself.
func TestCommittedBaseline(t *testing.T) {
	base, err := gate.ReadFiles("../baseline/quick.txt")
	require.NoError(t, err)
	assert.Empty(t, base.Warnings)
	rep, err := gate.Compare(base, base, gate.DefaultConfig())
	require.NoError(t, err)
	for _, k := range []string{"cpu", "cpu-physical-cores", "cpu-logical-cores", "cpu-cache-line", "gomaxprocs", "go", "goos", "goarch", "commit"} {
		assert.NotEmpty(t, rep.Base.Facts[k], "fact %s", k)
	}
	assert.NotContains(t, rep.Base.Facts["commit"], "dirty", "record baselines from a clean checkout")
	assert.False(t, rep.Regressed())
	assert.Empty(t, rep.Warnings, "a floor missing from the baseline, or GOMAXPROCS mixed")
	names := map[string]bool{}
	for _, c := range rep.Comparisons {
		names[c.Benchmark] = true
		assert.GreaterOrEqual(t, c.BaseN, 10, "%s %s", c.Benchmark, c.Unit)
		if c.Role == "" && strings.HasSuffix(c.Unit, "sec/op") {
			assert.NotEmpty(t, c.FloorName, "%s has no floor", c.Benchmark)
		}
	}
	for _, n := range []string{"Floor/cas", "Floor/clock", "Floor/map1k", "Bucket/pass/serial", "Keyed/1k/serial", "Gate/accept", "Gate/deny", "Wire/decode", "Sim/run"} {
		assert.True(t, names[n], "%s is in the baseline", n)
	}
}
