package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedev/sluice/scenarios"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --duration 0s is refused as usage, not taken for the scenario's own
// duration; a --duration at which the scenario, scaled, would be refused
// as a file is refused as usage naming the flag and the bound, before
// anything runs or is written.
func TestRunDurationIsCheckedLikeTheFile(t *testing.T) {
	ramp := filepath.Join(t.TempDir(), "ramp.yaml")
	require.NoError(t, os.WriteFile(ramp, []byte(`name: t
duration: 1h
policy:
  channels:
    - {name: move, class: input, rate: 30, burst: 30}
populations:
  - {name: honest, behaviour: honest, count: 2, params: {chat_every: 0s}, arrival: {kind: ramp, over: 1us}}
`), 0o644))
	_, err := scenarios.Load(ramp)
	require.NoError(t, err, "the file is valid at its own duration")
	for _, c := range []struct {
		name, file, dur string
		want            []string
	}{
		{"zero", scenarioDir + "quickstart.yaml", "0s", []string{"--duration: 0s is not a run length", "leave the flag out"}},
		{"shorter than the interval's bound", scenarioDir + "quickstart.yaml", "1ms", []string{"--duration: 1ms is refused", "interval must be between 10ms and the duration"}},
		{"a ramp scaled to nothing", ramp, "1s", []string{"--duration: 1s is refused", "populations[0].arrival.over a ramp needs a positive duration"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, out, errOut := runCLI(t, "run", "--progress", "lines", "--duration", c.dur, "-o", dir, c.file)
			assert.Equal(t, exitUsage, code, out+errOut)
			for _, w := range c.want {
				assert.Contains(t, errOut, w)
			}
			assert.NotContains(t, errOut, "variant 1/")
			assert.NoDirExists(t, dir)
		})
	}
}
