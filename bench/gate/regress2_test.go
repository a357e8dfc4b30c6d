package gate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/bench/gate"
)

// A configured unit that matches nothing on either side (go test's ns/op,
// where the gate reads sec/op), beside one that is compared, is not
// skipped silently: the report warns that nothing was gated on it. (A
// warning, not an error: cpu-sec/op is absent where the harness does not
// measure CPU time.)
func TestUnitMatchingNothingWarns(t *testing.T) {
	cfg, err := gate.ParseConfig(strings.NewReader("units: [ns/op, allocs/op]\nexact_units: [allocs/op]\n"), "x.yaml")
	require.NoError(t, err)
	mk := func(ns float64) string {
		var b strings.Builder
		b.WriteString("pkg: example.com/p\n")
		for i := range 10 {
			fmt.Fprintf(&b, "BenchmarkA-2 1000 %.4f ns/op 0 allocs/op\n", ns*(1+float64(i)/1000))
		}
		return b.String()
	}
	rep, err := compare(t, mk(100), mk(200), cfg)
	require.NoError(t, err)
	assert.Contains(t, rep.Warnings, "unit ns/op is configured but no benchmark reported it: nothing was gated on it")
}
