package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const refusedScenario = `name: t
duration: %s
policy:
  channels:
    - {name: move, class: input, rate: 30, burst: 30}
    - {name: chat, class: request, rate: 1, burst: 5}
variants:
  - name: ok
  - name: bad
    set:
      channels:
        - {name: chat, class: input}
populations:
  - {name: honest, behaviour: honest, count: 2}
thresholds:
  - honest.sent > 0
`

func writeRefusedScenario(t *testing.T, dur string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(p, fmt.Appendf(nil, refusedScenario, dur), 0o644))
	return p
}

// A run the load generator would refuse (3h at the default 1s interval is
// too many time-series points) is refused by validate, and by run before
// anything runs or is written: an error naming the file's key, exit 1, no
// panic, no results file.
func TestRunTheHarnessRefusesFailsUpFront(t *testing.T) {
	file := writeRefusedScenario(t, "3h")
	code, out, errOut := runCLI(t, "validate", file)
	assert.Equal(t, exitError, code, out+errOut)
	assert.Contains(t, errOut, "interval: 1s gives more than 10000 points over 3h0m0s: make it at least 1.08s (the file sets no interval: 1s is the default)")
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut = runCLI(t, "run", "--progress", "none", "--policy", "ok", "-o", dir, file)
	assert.Equal(t, exitError, code, out+errOut)
	assert.Contains(t, errOut, "interval: 1s gives more than")
	assert.NoFileExists(t, filepath.Join(dir, "results.json"))
}

// A variant whose policy the behaviours cannot send on is named in the
// error, before the first variant runs.
func TestRunNamesTheVariantTheHarnessRefuses(t *testing.T) {
	file := writeRefusedScenario(t, "2s")
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut := runCLI(t, "run", "--progress", "none", "-o", dir, file)
	assert.Equal(t, exitError, code, out+errOut)
	assert.Contains(t, errOut, `variant "bad"`)
	assert.NotContains(t, out, "== policy ok", "variant ok ran before bad was refused")
	assert.NoDirExists(t, dir)
}

// A variant expected to fail that passes is named, and said to have held
// every threshold, rather than reported as "thresholds failed".
func TestUnexpectedPassIsExplained(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`name: t
duration: 2s
policy:
  channels:
    - {name: move, class: input, rate: 30, burst: 30}
variants:
  - name: good
  - name: kept-bad
    expect: fail
populations:
  - {name: honest, behaviour: honest, count: 2, params: {ability_every: -1s, chat_every: -1s, purchase_every: -1s}}
thresholds:
  - honest.sent > 0
`), 0o644))
	code, out, errOut := runCLI(t, "run", "--progress", "none", "-o", t.TempDir(), p)
	assert.Equal(t, exitThresholds, code)
	assert.Contains(t, out+errOut, "policy kept-bad: expected to fail")
	assert.NotContains(t, out, "thresholds failed")
}

// An unwritable output directory is found before the run. (Bad flag
// values: TestExitCodes.)
func TestRunChecksItsOutputFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, out, errOut := runCLI(t, "run", "--progress", "none", "-o", filepath.Join(file, "sub"), scenarioDir+"quickstart.yaml")
	assert.Equal(t, exitError, code, out+errOut)
	assert.Contains(t, errOut, "results directory")
}

// serve refuses a non-loopback address as a usage error that says why,
// not with the server's advice to set a Go config field.
func TestServeRefusesANonLoopbackAddress(t *testing.T) {
	code, out, errOut := runCLI(t, "serve", "--policy", "../scenarios/policies/game.yaml", "--listen", "0.0.0.0:0")
	assert.Equal(t, exitUsage, code, out+errOut)
	assert.Contains(t, errOut, "loopback addresses only")
	assert.NotContains(t, errOut, "AllowNonLoopback")
}

// report's -o names the page to write: a directory there, or a directory
// that does not exist, is reported naming what was given rather than a
// temporary file the user never asked for.
func TestReportOutputErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "run", "--progress", "none", "--policy", "balanced", "--duration", "2s", "-o", dir, scenarioDir+"quickstart.yaml")
	require.Equal(t, exitOK, code, out+errOut)
	results := filepath.Join(dir, "results.json")
	sub := filepath.Join(t.TempDir(), "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	for _, c := range []struct{ out, want string }{
		{sub, sub + " is a directory"},
		{filepath.Join(dir, "none", "r.html"), "cannot write " + filepath.Join(dir, "none", "r.html") + ": no such file or directory"},
	} {
		code, out, errOut := runCLI(t, "report", results, "-o", c.out)
		assert.Equal(t, exitError, code, out+errOut)
		assert.Contains(t, errOut, c.want)
		assert.NotContains(t, errOut, ".tmp-")
	}
}
