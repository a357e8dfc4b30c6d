package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A variant kept as a bad example is expected to fail: the run says so,
// and so do the results file, report's lines and the page it renders from
// that file alone.
func TestReportShowsExpectedFailures(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "run", "--progress", "none", "-o", dir, scenarioDir+"policy-compare.yaml")
	require.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "== policy tight  (a bad policy kept for comparison: expected to fail)")

	results := filepath.Join(dir, reports.ResultsFile)
	r, err := reports.ReadFile(results)
	require.NoError(t, err)
	require.Len(t, r.Variants, 3)
	assert.Equal(t, reports.ExpectPass, r.Variants[0].Expect)
	assert.Equal(t, reports.ExpectFail, r.Variants[1].Expect)

	page := filepath.Join(dir, "again.html")
	code, out, errOut = runCLI(t, "report", results, "-o", page)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "policy balanced: PASS ")
	assert.Regexp(t, `policy tight: FAIL \d+/\d+, expected \(a bad policy kept for comparison\)`, out)
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), "Expected to fail: a bad policy kept for comparison")
	assert.Contains(t, string(html), `<span class="badge expected">FAIL `)
}
