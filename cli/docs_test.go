package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/gate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const repoRoot = "../"

// TestReadmeLinksAndKeepsItsArchitecture holds the README to what it is
// for: the two commands, the architecture table, and links that lead to
// pages that exist.
func TestReadmeLinksAndKeepsItsArchitecture(t *testing.T) {
	data, err := os.ReadFile(repoRoot + "README.md")
	require.NoError(t, err)
	readme := string(data)
	assert.Contains(t, readme, "go test ./...")
	assert.Contains(t, readme, "go run ./cmd/sluice run scenarios/quickstart.yaml")
	assert.Contains(t, readme, "## Architecture")
	assert.Contains(t, readme, "| `atomicbucket` |")
	for _, m := range regexp.MustCompile(`\]\(([^)#]+)\)`).FindAllStringSubmatch(readme, -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		_, err := os.Stat(filepath.Join(repoRoot, m[1]))
		assert.NoError(t, err, "README links to %s", m[1])
	}
	for _, page := range []string{"scenarios", "behaviours", "policy", "embedding", "harness", "gate"} {
		assert.Contains(t, readme, "(docs/"+page+".md)")
	}
}

// TestDocsSayWhatTheCodeSays holds docs/behaviours.md to the output of
// sluice behaviours, and docs/gate.md to the gate's own sample rule.
func TestDocsSayWhatTheCodeSays(t *testing.T) {
	data, err := os.ReadFile(repoRoot + "docs/behaviours.md")
	require.NoError(t, err)
	code, out, stderr := runCLI(t, "behaviours")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, string(data), "```\n"+out+"```\n", "docs/behaviours.md lists what sluice behaviours prints: paste its output")

	data, err = os.ReadFile(repoRoot + "docs/gate.md")
	require.NoError(t, err)
	assert.Contains(t, strings.Join(strings.Fields(string(data)), " "), gate.SampleRule(gate.DefaultMinSamples))
}
