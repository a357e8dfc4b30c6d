package cli

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tmpFiles lists the temporary files and directories under dir (names
// holding ".tmp-").
func tmpFiles(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// The repro, with a real process and real signals: a loopback run
// into -o, Ctrl-C after 3 s, and a second Ctrl-C while the results are
// being written (sent the moment a histogram's temporary file shows, so
// that it lands inside the write however fast the machine is). Nothing
// half-written is left, and the next run into the same -o is not refused
// for what the cut-short write left.
func TestSecondInterruptDuringTheWriteLeavesNothingHalfWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CLI as a process for a few seconds")
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "run", "--driver", "loopback", "--progress", "none", "-o", out, scenarioDir+"quickstart.yaml")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(3 * time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	// The second Ctrl-C the moment a histogram file is being written.
	deadline := time.Now().Add(30 * time.Second)
	sent := false
	for !sent && time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatal("the run ended before its histograms were written")
		default:
		}
		for _, p := range tmpFiles(out) {
			if strings.Contains(p, ".hgrm.tmp-") || strings.Contains(p, ".hlog.tmp-") {
				require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
				sent = true
				break
			}
		}
	}
	require.True(t, sent, "no histogram file was ever being written")
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the second Ctrl-C did not end the run")
	}
	assert.Equal(t, exitInterrupted, cmd.ProcessState.ExitCode())

	// Nothing half-written: no temporary file left, and each file at its
	// real name whole.
	assert.Empty(t, tmpFiles(out), "temporary files left behind")
	if _, err := os.Stat(filepath.Join(out, reports.ResultsFile)); err == nil {
		_, err := reports.ReadFile(filepath.Join(out, reports.ResultsFile))
		assert.NoError(t, err, "results.json is whole")
	}
	if html, err := os.ReadFile(filepath.Join(out, reports.ReportFile)); err == nil {
		assert.Contains(t, string(html[max(0, len(html)-64):]), "</html>", "report.html is whole")
	}

	// The next run into the same -o is not refused.
	code, stdout, stderr := runCLI(t, "run", "--progress", "none", "-o", out, scenarioDir+"quickstart.yaml")
	assert.Equal(t, exitOK, code, "%s%s", stdout, stderr)
	assert.NotContains(t, stderr, "not written by sluice")
	assert.Empty(t, tmpFiles(out))
	entries, err := os.ReadDir(filepath.Join(out, reports.HDRDir))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "a histogram directory per variant")
}
