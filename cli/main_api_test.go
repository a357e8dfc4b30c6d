package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MainWithOutput is the CLI a program embeds: exit codes as the package
// documents them, and everything the commands print in the writers given,
// warnings included (a damaged trace converted with --partial).
func TestMainWithOutputWritesWhereItIsTold(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, exitOK, MainWithOutput([]string{"version"}, &out, &errOut))
	assert.Contains(t, out.String(), "sluice ")

	out.Reset()
	errOut.Reset()
	assert.Equal(t, exitUsage, MainWithOutput([]string{"frobnicate"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown command "frobnicate"`)

	data, err := os.ReadFile(shippedTrace)
	require.NoError(t, err)
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.trace")
	require.NoError(t, os.WriteFile(cut, data[:len(data)/2], 0o644))
	out.Reset()
	errOut.Reset()
	code := MainWithOutput([]string{"trace", "convert", "--partial", "--to", "jsonl", "-o", filepath.Join(dir, "cut.jsonl"), cut}, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	assert.Contains(t, errOut.String(), "cut.trace: damaged: ")
}
