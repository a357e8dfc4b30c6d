package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	code := execute(root)
	return code, out.String(), errOut.String()
}

const scenarioDir = "../scenarios/"

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: x\nduratoin: 1s\n"), 0o644))
	empty := filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"version", []string{"version"}, exitOK, "sluice "},
		{"help", []string{"--help"}, exitOK, "Exit codes"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"unknown flag", []string{"run", "--nope", "x.yaml"}, exitUsage, "unknown flag"},
		{"missing argument", []string{"run"}, exitUsage, "accepts 1 arg"},
		{"validate ok", []string{"validate", scenarioDir + "quickstart.yaml"}, exitOK, "ok (5 populations, 2 policy variants"},
		{"validate bad key", []string{"validate", bad}, exitError, `bad.yaml:2:1: duratoin: unknown field (did you mean "duration"?)`},
		{"validate empty file", []string{"validate", empty}, exitError, "empty.yaml: the file is empty"},
		{"validate missing file", []string{"validate", filepath.Join(dir, "none.yaml")}, exitError, "no such file"},
		{"audit", []string{"audit", "--policy", scenarioDir + "policies/game.yaml"}, exitOK, "game.yaml: 1 finding\n"},
		{"audit without policy", []string{"audit"}, exitUsage, "--policy FILE is required"},
		{"serve without policy", []string{"serve"}, exitUsage, "--policy FILE is required"},
		{"report missing", []string{"report", filepath.Join(dir, "none.json")}, exitError, "no such file"},
		{"unknown bench subcommand", []string{"bench", "abb"}, exitUsage, `unknown command "abb"`},
		// A run refused for its flags writes nothing, not even its
		// results directory (outArg stands for a fresh one).
		{"bad progress", []string{"run", "--progress", "loud", "-o", outArg, scenarioDir + "quickstart.yaml"}, exitUsage, "--progress"},
		{"bad variant", []string{"run", "--policy", "nope", "-o", outArg, scenarioDir + "quickstart.yaml"}, exitUsage, `--policy: no policy variant "nope"`},
		{"negative duration", []string{"run", "--duration", "-5s", "-o", outArg, scenarioDir + "quickstart.yaml"}, exitUsage, "--duration: -5s is negative"},
		{"duration too long", []string{"run", "--duration", "1000h", "-o", outArg, scenarioDir + "quickstart.yaml"}, exitUsage, "--duration: 1000h0m0s is longer than the longest run, 24h"},
		{"bad driver", []string{"run", "--driver", "bogus", "-o", outArg, scenarioDir + "quickstart.yaml"}, exitUsage, `--driver: "bogus" is not a driver (sim or loopback)`},
		// Flags that need no scenario are named before the file is read.
		{"bad driver, bad file", []string{"run", "--driver", "bogus", "-o", outArg, bad}, exitUsage, `--driver: "bogus" is not a driver (sim or loopback)`},
		{"negative duration, missing file", []string{"run", "--duration", "-1s", "-o", outArg, filepath.Join(dir, "none.yaml")}, exitUsage, "--duration: -1s is negative"},
		{"bad progress, bad file", []string{"run", "--progress", "loud", "-o", outArg, bad}, exitUsage, "--progress"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := slices.Clone(c.args)
			if i := slices.Index(args, outArg); i >= 0 {
				args[i] = out
			}
			code, stdout, stderr := runCLI(t, args...)
			assert.Equal(t, c.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			assert.Contains(t, stdout+stderr, c.want)
			if code != exitOK {
				assert.NoDirExists(t, out)
			}
		})
	}
}

// outArg, in a TestExitCodes row, is replaced by a results directory that
// does not exist yet.
const outArg = "{out}"

func TestRunWritesResultsAndReport(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "run", "--progress", "lines", "-o", dir, scenarioDir+"quickstart.yaml")
	require.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "== policy balanced")
	assert.Contains(t, out, "== comparison (delta against balanced)")
	assert.Contains(t, errOut, "variant 2/2 tight")
	r, err := reports.ReadFile(filepath.Join(dir, reports.ResultsFile))
	require.NoError(t, err)
	assert.True(t, r.Run.Complete)
	// The terminal's comparison is the report's: the same rows, formatted
	// the same way.
	rows, err := reports.Compare(r)
	require.NoError(t, err)
	for _, row := range rows {
		if row.Group == "all honest" || row.Group == "all hostile" {
			assert.Contains(t, out, row.Group+" "+row.Measure)
			if c := row.Cells[1]; c.Delta != "" {
				assert.Contains(t, out, c.Value+" ("+c.Delta+")")
			}
		}
	}
	assert.Len(t, r.Variants, 2)
	html, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(html), "quickstart")
	hgrm, _ := filepath.Glob(filepath.Join(dir, "hdr", "*", "*.hgrm"))
	assert.NotEmpty(t, hgrm)

	// report regenerates the page from the results alone.
	page := filepath.Join(dir, "again.html")
	code, _, errOut = runCLI(t, "report", filepath.Join(dir, reports.ResultsFile), "-o", page)
	require.Equal(t, exitOK, code, errOut)
	again, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Equal(t, html, again, "the page depends on the results alone")
}

func TestFailingThresholdsExitWithTheirOwnCode(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(scenarioDir + "quickstart.yaml")
	require.NoError(t, err)
	strict := strings.Replace(string(src), "  - honest.p99 < 100ms", "  - honest.p99 < 1ms", 1)
	require.NotEqual(t, string(src), strict)
	path := filepath.Join(dir, "strict.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strict), 0o644))
	code, out, _ := runCLI(t, "run", "--progress", "none", "-o", dir, path)
	assert.Equal(t, exitThresholds, code)
	assert.Contains(t, out, "FAIL  honest.p99 < 1ms")
	assert.Contains(t, out, "thresholds failed")
}

// syncBuffer is a bytes.Buffer safe to read while the CLI writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C stops a run cleanly: partial results are written, marked
// incomplete, and the exit code says interrupted.
func TestInterruptWritesPartialResults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs over real sockets for a few seconds")
	}
	dir := t.TempDir()
	root := newRoot()
	var out bytes.Buffer
	errOut := &syncBuffer{}
	root.SetOut(&out)
	root.SetErr(errOut)
	root.SetArgs([]string{"run", "--driver", "loopback", "--progress", "lines", "--policy", "balanced", "-o", dir, scenarioDir + "quickstart.yaml"})
	done := make(chan int, 1)
	go func() { done <- execute(root) }()
	// The signal handler is installed before the first progress line.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "variant 1/1") {
		require.True(t, time.Now().Before(deadline), "no progress: %s", errOut.String())
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3500 * time.Millisecond) // past the 2 s warmup
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	var code int
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not stop after Ctrl-C")
	}
	assert.Equal(t, exitInterrupted, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	assert.Contains(t, out.String(), "marked incomplete")
	r, err := reports.ReadFile(filepath.Join(dir, reports.ResultsFile))
	require.NoError(t, err)
	assert.False(t, r.Run.Complete)
	require.Len(t, r.Variants, 1)
	assert.Positive(t, r.Variants[0].Populations[0].Summary.Sent, "what was measured before the interrupt is kept")
}

// benchFile writes a go test -bench output with n samples of a benchmark
// at ns per op (with a small spread) beside a floor at 2 ns.
func benchFile(t *testing.T, dir, name string, n int, ns float64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/sluicedev/sluice/bench\n")
	for i := 0; i < n; i++ {
		spread := 1 + float64(i%5)/500
		fmt.Fprintf(&b, "BenchmarkFloor/cas-2 \t1000000\t%.3f ns/op\n", 2.0*spread)
		fmt.Fprintf(&b, "BenchmarkBucket/pass-2 \t1000000\t%.3f ns/op\n", ns*spread)
	}
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

func TestGateExitCodes(t *testing.T) {
	dir := t.TempDir()
	base := benchFile(t, dir, "base.txt", 10, 100)
	same := benchFile(t, dir, "same.txt", 10, 101)
	slow := benchFile(t, dir, "slow.txt", 10, 120)
	few := benchFile(t, dir, "few.txt", 3, 120)
	code, out, errOut := runCLI(t, "gate", base, same)
	assert.Equal(t, exitOK, code, "%s%s", out, errOut)
	code, out, errOut = runCLI(t, "gate", base, slow)
	assert.Equal(t, exitThresholds, code, "%s%s", out, errOut)
	assert.Contains(t, out, "Bucket/pass")
	code, out, _ = runCLI(t, "gate", "--json", base, slow)
	assert.Equal(t, exitThresholds, code)
	assert.Contains(t, out, `"regressed"`)
	code, out, errOut = runCLI(t, "gate", base, few)
	assert.Equal(t, exitError, code, "too few samples is an error, not a pass: %s%s", out, errOut)
	code, _, _ = runCLI(t, "gate", base)
	assert.Equal(t, exitUsage, code)
	// --min-effect 0 is no minimum effect, not the config's 5%.
	slight := benchFile(t, dir, "slight.txt", 10, 103)
	code, out, errOut = runCLI(t, "gate", base, slight)
	assert.Equal(t, exitOK, code, "%s%s", out, errOut)
	code, out, errOut = runCLI(t, "gate", "--min-effect", "0", base, slight)
	assert.Equal(t, exitThresholds, code, "%s%s", out, errOut)
	code, _, _ = runCLI(t, "bench", "ab")
	assert.Equal(t, exitUsage, code)
}

// Every usage error names what was wrong and points to the help of the
// command it concerns; a missing argument is named by the command's usage
// line.
func TestUsageErrorsPointToHelp(t *testing.T) {
	cases := []struct {
		args    []string
		want    []string
		wantNot string // a command with subcommands names them in its help, not a usage line
	}{
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "run 'sluice --help' for usage"}, ""},
		{[]string{"runn"}, []string{`unknown command "runn"`, "run 'sluice --help' for usage"}, ""},
		{[]string{"run"}, []string{"accepts 1 arg(s), received 0", "usage: sluice run FILE", "run 'sluice run --help' for usage"}, ""},
		{[]string{"validate", "a", "b"}, []string{"received 2", "usage: sluice validate FILE", "run 'sluice validate --help' for usage"}, ""},
		{[]string{"version", "extra"}, []string{`unknown command "extra"`, "run 'sluice version --help' for usage"}, ""},
		{[]string{"bench", "abb"}, []string{`unknown command "abb"`, "run 'sluice bench --help' for usage"}, "usage: sluice bench"},
		{[]string{"run", "--nope", "x.yaml"}, []string{"unknown flag: --nope", "run 'sluice run --help' for usage"}, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, c.args...)
			assert.Equal(t, exitUsage, code, out+errOut)
			for _, w := range c.want {
				assert.Contains(t, errOut, w)
			}
			if c.wantNot != "" {
				assert.NotContains(t, errOut, c.wantNot)
			}
		})
	}
}

// Each command's help says what it exits with and shows an example.
func TestHelpHasExamplesAndExitCodes(t *testing.T) {
	for _, cmd := range []string{"run", "validate", "report", "audit", "serve"} {
		code, out, errOut := runCLI(t, cmd, "--help")
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "Exit codes:", cmd)
		assert.Contains(t, out, "Examples:\n  sluice "+cmd+" ", cmd)
	}
}
