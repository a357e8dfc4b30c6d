package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An output directory the final write would refuse is refused before any
// variant runs, naming the path in the way once and what to do, and
// nothing there is touched.
func TestRunRefusesAnUnusableOutputBeforeRunning(t *testing.T) {
	mkdir := func(p string) { require.NoError(t, os.MkdirAll(p, 0o755)) }
	write := func(p string) { mkdir(filepath.Dir(p)); require.NoError(t, os.WriteFile(p, []byte("mine"), 0o644)) }
	cases := []struct {
		name string
		make func(dir string) string // returns the path in the way
	}{
		{"the output is a file", func(dir string) string { write(dir); return dir }},
		{"hdr is a file", func(dir string) string { p := filepath.Join(dir, reports.HDRDir); write(p); return p }},
		{"hdr holds a file of the user's", func(dir string) string {
			p := filepath.Join(dir, reports.HDRDir, "balanced", "notes.txt")
			write(p)
			return p
		}},
		{"results.json is a directory", func(dir string) string { p := filepath.Join(dir, reports.ResultsFile); mkdir(p); return p }},
		{"report.html is a directory", func(dir string) string { p := filepath.Join(dir, reports.ReportFile); mkdir(p); return p }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			path := c.make(dir)
			code, out, errOut := runCLI(t, "run", "--progress", "lines", "--policy", "balanced", "--duration", "2s", "-o", dir, scenarioDir+"quickstart.yaml")
			assert.Equal(t, exitError, code, out+errOut)
			assert.NotContains(t, errOut, "variant 1/1", "the run started")
			assert.Empty(t, out)
			assert.Contains(t, errOut, path+" ")
			assert.Equal(t, 1, strings.Count(errOut, path), "the path is named once: %s", errOut)
			assert.Contains(t, errOut, "write to another directory")
			_, err := os.Stat(path)
			assert.NoError(t, err, "what was in the way is left as it was")
		})
	}
}

// When the results cannot be written after the run after all (here the
// histogram directory's place is taken while the run goes), the summary,
// the thresholds and the comparison are printed before the error, so
// what was measured is not lost.
func TestRunPrintsTheSummaryWhenTheWriteFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	root := newRoot()
	var out bytes.Buffer
	errOut := &syncBuffer{}
	root.SetOut(&out)
	root.SetErr(errOut)
	// Minutes of virtual time: about a second to run (ten under -race),
	// time enough to make the conflict once the first variant has begun.
	root.SetArgs([]string{"run", "--progress", "lines", "--duration", "4m", "-o", dir, scenarioDir + "quickstart.yaml"})
	done := make(chan int, 1)
	go func() { done <- execute(root) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "variant 1/2") {
		require.True(t, time.Now().Before(deadline), "no progress: %s", errOut.String())
		time.Sleep(5 * time.Millisecond)
	}
	hdr := filepath.Join(dir, reports.HDRDir)
	require.NoError(t, os.WriteFile(hdr, []byte("mine"), 0o644))
	require.NotContains(t, errOut.String(), "variant 2/2 tight: 4m0s of 4m0s", "the conflict was made after the run")
	var code int
	select {
	case code = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the run did not end")
	}
	assert.Equal(t, exitError, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	for _, want := range []string{"== policy balanced", "== policy tight", "PASS  honest.p99 < 100ms", "== comparison (delta against balanced)", "were not written to " + dir} {
		assert.Contains(t, out.String(), want)
	}
	assert.NotContains(t, out.String(), "wrote ")
	assert.Contains(t, errOut.String(), hdr+" is not a directory")
	assert.NoFileExists(t, filepath.Join(dir, reports.ResultsFile))
}
