package cli

import (
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/scenarios"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// The summary of the shipped quickstart (driver sim: deterministic) is
// held line for line, so a change to what it prints is made on purpose:
// scheduled, sent and not sent apart, the legend of the counts, the
// comparison's headline rows and the verdict. The README's sample lines
// are taken from this file. The sim's server time is wall time and varies
// from run to run: its numbers are masked.
func TestSummaryGoldenQuickstart(t *testing.T) {
	s, err := scenarios.Load("../scenarios/quickstart.yaml")
	require.NoError(t, err)
	out, err := scenarios.Run(context.Background(), s, scenarios.Options{})
	require.NoError(t, err)
	var b strings.Builder
	printSummary(&b, out.Results)
	got := maskServerTime(b.String())
	const golden = "testdata/quickstart-summary.golden"
	if *updateGolden {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), got, "run go test ./cli -run TestSummaryGoldenQuickstart -update after a deliberate change")
}

var serverTimeLine = regexp.MustCompile(`(?m)^\s*server service time per frame.*$`)

// maskServerTime replaces the server-time row, padding included (its
// values are never the widest of their columns, so the other rows keep
// their alignment).
func maskServerTime(s string) string {
	return serverTimeLine.ReplaceAllString(s, "  server service time per frame (sim: wall time, not comparable): masked")
}
