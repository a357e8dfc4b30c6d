package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/examples/ndjson"
	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets a test run this program as a process of its own: the
// test binary re-executed with cliEnv set runs main, so the process is
// the sluice-ndjson a studio would build, without a go build in the test.
func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		main()
		return // main exits; this is not reached
	}
	os.Exit(m.Run())
}

const cliEnv = "SLUICE_NDJSON_RUN_CLI"

const repoRoot = "../../../../"

// The program drives the example server, which sluice did not start and
// whose framing is not sluice's, through the shipped flood scenario over
// loopback sockets: run --protocol ndjson --target ADDR, as the README
// says. The honest players keep their service and every flooding client
// is cut off, by the reasons the server sent it.
func TestFloodScenarioThroughTheCLIBuiltWithTheProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario for seconds over loopback sockets")
	}
	p, err := core.LoadPolicy(repoRoot + "scenarios/policies/game.yaml")
	require.NoError(t, err)
	srv, err := ndjson.NewServer(p, "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()

	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "run", "--protocol", ndjson.Name, "--target", srv.Addr().String(),
		"--duration", "6s", "--progress", "none", "-o", out, repoRoot+"scenarios/flood-mix.yaml")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	log := "stdout:\n" + stdout.String() + "\nstderr:\n" + stderr.String()
	assert.Contains(t, stdout.String(), "target "+srv.Addr().String()+", a server sluice did not start", log)

	r, err := reports.ReadFile(filepath.Join(out, reports.ResultsFile))
	require.NoError(t, err, log)
	assert.True(t, r.Run.Complete)
	assert.Equal(t, srv.Addr().String(), r.Run.Target)
	require.Len(t, r.Variants, 1)
	v := r.Variants[0]
	// Exit 0: every threshold of the scenario that such a run measures
	// held. A harness that fell behind its schedule on a loaded machine
	// makes the run invalid (exit 3, thresholds not judged); what the
	// clients saw, below, is still checked.
	if code == 3 && len(v.Invalid) > 0 {
		t.Logf("thresholds not checked, measurements invalid on this machine: %v", v.Invalid)
	} else {
		require.Equal(t, 0, code, log)
	}

	honest := v.Population("honest")
	require.NotNil(t, honest)
	hello := honest.Kind("hello")
	require.NotNil(t, hello)
	assert.Positive(t, hello.Sent)
	assert.Equal(t, hello.Sent, hello.Accepted, "every honest hello answered ok")
	assert.Positive(t, honest.Kind("chat").Accepted, "honest requests answered")
	assert.Zero(t, honest.Summary.FalseDisconnects)
	assert.Zero(t, honest.Summary.NotSent, "no honest message waited on a dropped connection")

	for _, name := range []string{"tiny", "bytes", "badlen", "garbage"} {
		p := v.Population(name)
		require.NotNil(t, p, name)
		c := p.Summary.CutOff
		require.NotNil(t, c, name)
		assert.Positive(t, c.Of, name)
		assert.Equal(t, c.Of, c.Clients, "%s: every flooding client cut off", name)
		if name == "tiny" || name == "bytes" {
			assert.Less(t, c.Max, 2*time.Second, "%s: the scenario's cutoff_max", name)
		}
		// The server said why: its bye lines, decoded by the plug-in,
		// are the session's drops by core.Reason name (a session the
		// server closed without one counts as Disconnected).
		session := p.Kind("session")
		require.NotNil(t, session, name)
		var told int64
		for reason, n := range session.Drops {
			if _, err := core.ParseReason(reason); err == nil {
				told += n
			}
		}
		assert.Positive(t, told, "%s: the server's disconnect reasons reached the clients: %v", name, session.Drops)
		assert.Zero(t, session.Drops["UnknownReason"], "%s: every reason decoded", name)
	}
	assert.Positive(t, v.Population("bytes").Kind("session").Drops[core.Oversize.String()], "lines over MaxLine end in Oversize")
}
