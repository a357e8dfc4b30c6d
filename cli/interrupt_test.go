package cli

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets a test run this package's CLI as a process of its own
// (the test binary with cliEnv set), for what only a real process shows:
// what a signal's default action does.
func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

const cliEnv = "SLUICE_TEST_RUN_CLI"

// A first Ctrl-C is answered at once, saying that the partial results are
// being written; a second one quits without waiting for them, with the
// interrupted exit code, and leaves no empty results directory behind.
func TestSecondInterruptQuits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CLI as a process for a few seconds")
	}
	dir := filepath.Join(t.TempDir(), "results", "out") // made by the run
	// An hour of virtual time: its results take a while to write, long
	// after the first Ctrl-C has stopped the run.
	cmd := exec.Command(os.Args[0], "run", "--duration", "1h", "--progress", "lines", "-o", dir, scenarioDir+"quickstart.yaml")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // whatever check fails first
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitFor := func(what string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "stderr closed before %q", what)
				if strings.Contains(l, what) {
					return
				}
			case <-timeout:
				_ = cmd.Process.Kill()
				t.Fatalf("no %q on stderr", what)
			}
		}
	}
	waitFor("variant 1/2")
	time.Sleep(500 * time.Millisecond) // minutes of virtual time to write
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waitFor("stopping and writing the partial results") // the run was going: not the message of one that had ended
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	var rest []string
	go func() {
		for l := range lines {
			rest = append(rest, l)
		}
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the second Ctrl-C did not end the run")
	}
	require.Error(t, err)
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.False(t, ws.Signaled(), "ended by the signal's default action: %v", cmd.ProcessState)
	assert.Equal(t, exitInterrupted, cmd.ProcessState.ExitCode(), "the documented interrupted code")
	assert.Contains(t, strings.Join(rest, "\n"), "interrupted again: quitting without writing the results", "ended by the second Ctrl-C, not by finishing")
	// What was written before the second Ctrl-C stays; an empty
	// directory the run made does not.
	if entries, err := os.ReadDir(dir); err == nil {
		assert.NotEmpty(t, entries, "an empty results directory is left behind")
	} else {
		assert.NoDirExists(t, filepath.Dir(dir), "the empty parent the run made is removed too")
	}
}

// A Ctrl-C is answered for what it does: it stops a run that is going, and
// stops nothing once the run has ended and its whole results are written.
func TestInterruptSaysWhatItStops(t *testing.T) {
	for _, c := range []struct {
		ended bool
		want  string
	}{
		{false, "stopping and writing the partial results"},
		{true, "the run had ended; writing its results"},
	} {
		var b strings.Builder
		p, err := newProgress("lines", &b)
		require.NoError(t, err)
		p.interrupted(c.ended)
		assert.Contains(t, b.String(), c.want)
		assert.Contains(t, b.String(), "Ctrl-C again to quit at once")
	}
}
