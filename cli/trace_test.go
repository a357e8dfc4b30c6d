package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const shippedTrace = scenarioDir + "traces/quickstart.trace"

func TestTraceInspect(t *testing.T) {
	code, out, errOut := runCLI(t, "trace", "inspect", shippedTrace)
	require.Equal(t, exitOK, code, errOut)
	for _, want := range []string{"recorder   sluice run quickstart", "sessions by group", "honest", "messages by kind", "move", "decisions recorded", "Drop ByteLimit", "top sessions by messages"} {
		assert.Contains(t, out, want)
	}
}

// A truncated trace is an error naming where; --partial reads up to the
// damage and says what it lost.
func TestTraceInspectTruncated(t *testing.T) {
	data, err := os.ReadFile(shippedTrace)
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut.trace")
	require.NoError(t, os.WriteFile(cut, data[:len(data)/2], 0o644))
	code, _, errOut := runCLI(t, "trace", "inspect", cut)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "truncated")
	assert.Contains(t, errOut, "(block ")
	code, out, errOut := runCLI(t, "trace", "inspect", "--partial", cut)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "damaged: ")
	assert.Contains(t, out, "records and")
}

// JSON Lines and back gives the same bytes; a bad field is an error naming
// the line and the field, and leaves no output file.
func TestTraceConvert(t *testing.T) {
	dir := t.TempDir()
	js, back := filepath.Join(dir, "qs.jsonl"), filepath.Join(dir, "back.trace")
	code, _, errOut := runCLI(t, "trace", "convert", "--to", "jsonl", "-o", js, shippedTrace)
	require.Equal(t, exitOK, code, errOut)
	code, _, errOut = runCLI(t, "trace", "convert", "--to", "trace", "-o", back, js)
	require.Equal(t, exitOK, code, errOut)
	a, _ := os.ReadFile(shippedTrace)
	b, _ := os.ReadFile(back)
	assert.Equal(t, a, b, "trace → JSON Lines → trace")

	lines, err := os.ReadFile(js)
	require.NoError(t, err)
	ls := strings.Split(string(lines), "\n")
	for i, l := range ls {
		if strings.Contains(l, `"op":"message"`) {
			ls[i] = strings.Replace(l, `"size":`, `"size":"big","x":`, 1)
			bad := filepath.Join(dir, "bad.jsonl")
			require.NoError(t, os.WriteFile(bad, []byte(strings.Join(ls, "\n")), 0o644))
			out := filepath.Join(dir, "bad.trace")
			code, _, errOut = runCLI(t, "trace", "convert", "--to", "trace", "-o", out, bad)
			assert.Equal(t, exitError, code)
			assert.Regexp(t, `jsonl line `+strconv.Itoa(i+1)+`: field "(size|x)"`, errOut)
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "no output file after a failed conversion")
			return
		}
	}
	t.Fatal("no message line")
}

func TestTraceConvertNeedsTo(t *testing.T) {
	code, _, errOut := runCLI(t, "trace", "convert", shippedTrace)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "want jsonl or trace")
}

// sluice run --record writes a trace per variant that inspect reads.
func TestRunRecord(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "run", "--progress", "none", "--policy", "balanced", "--duration", "5s", "--record", filepath.Join(dir, "traces"), "-o", filepath.Join(dir, "res"), scenarioDir+"quickstart.yaml")
	require.Contains(t, []int{exitOK, exitThresholds}, code, errOut)
	code, out, errOut := runCLI(t, "trace", "inspect", filepath.Join(dir, "traces", "balanced.trace"))
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "sluice run quickstart (balanced, sim, seed 1)")
	code, _, errOut = runCLI(t, "run", "--progress", "none", "--driver", "loopback", "--record", dir, "-o", filepath.Join(dir, "res2"), scenarioDir+"quickstart.yaml")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "record")
}
