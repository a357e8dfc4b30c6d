package scenarios

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/reports"
)

// Every shipped scenario's report, the one self-contained page with its
// interactive charts' library and data, stays under 2 MB (driver sim, as
// `sluice run` runs them by default).
func TestShippedScenarioReportsUnder2MB(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every shipped scenario")
	}
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		s, err := Load(f)
		require.NoError(t, err, f)
		out, err := Run(context.Background(), s, Options{})
		require.NoError(t, err, f)
		var b bytes.Buffer
		require.NoError(t, reports.WriteHTML(&b, out.Results), f)
		t.Logf("%s: report %d KiB", f, b.Len()>>10)
		require.Less(t, b.Len(), 2<<20, "%s: report of %d bytes", f, b.Len())
		// The run records which variants it planned, so an interrupted
		// one can name those it never ran.
		require.Len(t, out.Results.Run.PlannedVariants, len(out.Results.Variants), f)
		require.Empty(t, out.Results.NotRun(), f)
	}
}
