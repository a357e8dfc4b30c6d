package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/gate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGateSaysTooFewSamplesOnceWithTheRule holds the gate to one line per
// comparison with too few samples, a verdict line stating the sample rule
// as gate --help states it, and no second copy of the same errors on
// stderr.
func TestGateSaysTooFewSamplesOnceWithTheRule(t *testing.T) {
	dir := t.TempDir()
	base := benchFile(t, dir, "base.txt", 10, 100)
	few := benchFile(t, dir, "few.txt", 3, 120)
	code, out, errOut := runCLI(t, "gate", base, few)
	require.Equal(t, exitError, code, "%s%s", out, errOut)
	assert.Equal(t, 1, strings.Count(out+errOut, "Bucket/pass sec/op: too few samples"), "%s%s", out, errOut)
	assert.NotContains(t, errOut, "too few samples")
	rule := gate.SampleRule(gate.DefaultMinSamples)
	assert.Contains(t, out, "gate: ERROR: 2 comparisons with too few samples: the gate needs "+rule)
	_, help, _ := runCLI(t, "gate", "--help")
	assert.Contains(t, strings.Join(strings.Fields(help), " "), rule)
	// --json prints no text report: there the error is the one account.
	code, _, errOut = runCLI(t, "gate", "--json", base, few)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "too few samples")
}

// TestGateWarnsOfSamplesTooShortToTime holds the gate to saying, with the
// rule, that samples of 100 iterations of a 500 ns op (50 µs each) are
// too short to time, as two runs of one commit at -benchtime 100x are.
func TestGateWarnsOfSamplesTooShortToTime(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, iters int, ns float64) string {
		var b strings.Builder
		b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/sluicedev/sluice/atomicbucket\n")
		for i := range 10 {
			fmt.Fprintf(&b, "BenchmarkTakeAtPass-2 \t%d\t%.1f ns/op\n", iters, ns*(1+float64(i%5)/100))
		}
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
		return path
	}
	_, out, _ := runCLI(t, "gate", write("a.txt", 100, 500), write("b.txt", 100, 520))
	assert.Contains(t, out, "warning: TakeAtPass: samples time 51µs (base) and 53.04µs (cand) each")
	assert.Contains(t, out, "under 10ms: too short to time")
	_, out, _ = runCLI(t, "gate", write("c.txt", 1_000_000, 500), write("d.txt", 1_000_000, 520))
	assert.NotContains(t, out, "too short to time")
}
