package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/reports"
)

// A loopback quickstart run records the server's own view beside the
// clients': the gate's counts and the server's per-population counts agree
// exactly on every comparable count, in results.json, in the summary and
// side by side in the report.
func TestLoopbackQuickstartShowsTheServersView(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 s run over real sockets")
	}
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "run", "--driver", "loopback", "--policy", "balanced", "--duration", "4s", "--progress", "none", "-o", dir, scenarioDir+"quickstart.yaml")
	require.Contains(t, []int{exitOK, exitThresholds}, code, "%s\n%s", out, errOut) // a loaded machine may fail a threshold
	r, err := reports.ReadFile(filepath.Join(dir, reports.ResultsFile))
	require.NoError(t, err)
	require.Len(t, r.Variants, 1)
	v := r.Variants[0]
	sv := v.Server
	require.NotNil(t, sv, "a loopback run records the server's view")
	require.True(t, sv.Check.Made, sv.Check.Why)
	var lines []string
	for _, row := range sv.Check.Rows {
		lines = append(lines, strings.Join([]string{row.Gate, row.Server, row.Reason}, " | "))
	}
	assert.True(t, sv.Check.Agree, "the gate and the server disagree:\n%s", v.ServerViewNote())
	n, bad := sv.Check.Compared()
	assert.Zero(t, bad)
	// The quickstart's traffic: accepted and refused moves, malformed and
	// oversize frames of the floods, replayed purchases.
	compared := map[string]int64{}
	for _, row := range sv.Check.Rows {
		if row.Compared {
			compared[row.Gate+" "+row.Reason] = row.GateCount
			assert.Equal(t, row.GateCount, row.Populations+row.BeforeHello, "%s %s", row.Gate, row.Reason)
		}
	}
	assert.Positive(t, compared["move None+QueueFull+Closed"], lines)
	assert.Positive(t, compared["purchase Replay"], lines)
	assert.Greater(t, n, 5, lines)
	// The server's counts over the measured window are there too.
	assert.Positive(t, sv.Window.Messages["move"]["None"])
	assert.Positive(t, sv.Window.Actions["Drop"])
	assert.Positive(t, sv.Window.FloodsTotal)

	assert.Contains(t, out, "server view: the gate and the server's populations agree on all")
	page, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	require.NoError(t, err)
	html := string(page)
	assert.True(t, strings.Contains(html, "<h3>The server's view</h3>"), "the report has the server's view")
	assert.True(t, strings.Contains(html, "<th class=\"num\">gate</th><th class=\"num\">populations</th><th class=\"num\">before Hello</th>"), "side by side")
	assert.True(t, strings.Contains(html, "agree on all"), "and says they agree")
	assert.False(t, strings.Contains(html, "<strong>NO</strong>"))
}
