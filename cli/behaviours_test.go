package cli

import (
	"strings"
	"testing"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBehavioursListsEveryRegisteredBehaviour holds `sluice behaviours`
// to every behaviour loadgen registers, each with every parameter under
// its YAML name and its default.
func TestBehavioursListsEveryRegisteredBehaviour(t *testing.T) {
	code, out, stderr := runCLI(t, "behaviours")
	require.Equal(t, exitOK, code, stderr)
	sections := map[string]string{}
	for _, block := range strings.Split(out, "\n\n") {
		name, rest, _ := strings.Cut(block, "\n")
		sections[name] = rest
	}
	names := behave.BehaviourNames()
	require.Len(t, sections, len(names))
	for _, name := range names {
		sec, ok := sections[name]
		if !assert.True(t, ok, "%s is listed", name) {
			continue
		}
		for _, p := range behave.BehaviourParams(name) {
			def := p.Default
			if def == "" {
				def = "-"
			}
			assert.Regexp(t, `(?m)^  `+regexpQuote(p.Name)+` +`+p.Type+` +`+regexpQuote(def)+` `, sec, "%s: %s", name, p.Name)
		}
	}
	assert.Regexp(t, `(?m)^  tick_rate +number +20 +movement inputs per second`, sections["honest"])
	assert.Regexp(t, `(?m)^  ladder\.base +duration +250ms `, sections["laggy"])

	code, out, _ = runCLI(t, "behaviours", "laggy")
	assert.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(out, "laggy\n"), out)
	code, _, stderr = runCLI(t, "behaviours", "lagy")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `no behaviour named "lagy"`)
}

func regexpQuote(s string) string {
	r := strings.NewReplacer(`.`, `\.`, `[`, `\[`, `]`, `\]`, `(`, `\(`, `)`, `\)`, `+`, `\+`, `*`, `\*`, `?`, `\?`, `|`, `\|`)
	return r.Replace(s)
}
