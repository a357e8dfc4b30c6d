package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolicyFileErrorsAreWordedAsAScenariosAre holds audit and serve
// --policy to file:line:col: field: why, with no package prefix, and to
// saying plainly that an empty policy is empty.
func TestPolicyFileErrorsAreWordedAsAScenariosAre(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, doc, want string }{
		{"misspelt field", "channels:\n  - name: move\n    class: input\n    rate: 30\n    burts: 30\n", `p.yaml:5:5: channels[0].burts: unknown field "burts" in Channel (did you mean "burst"?)`},
		{"bad value", "channels:\n  - {name: move, class: input, rate: -30}\n", "p.yaml:2:38: channels[0].rate: -30 must be greater than 0"},
		{"tab", "channels:\n  - name: move\n\t class: input\n", "p.yaml:3:1: found"},
		{"empty", "", "p.yaml: empty document: the file holds no policy"},
		{"comments only", "# nothing yet\n", "p.yaml: empty document: the file holds no policy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, "p.yaml")
			require.NoError(t, os.WriteFile(file, []byte(c.doc), 0o644))
			for _, cmd := range [][]string{{"audit", "--policy", file}, {"serve", "--policy", file}} {
				code, _, stderr := runCLI(t, cmd...)
				assert.Equal(t, exitError, code, "%v: %s", cmd, stderr)
				assert.Contains(t, stderr, filepath.Join(dir, c.want), cmd)
				assert.NotContains(t, stderr, "core:", cmd)
				assert.NotContains(t, stderr, "(line ", cmd)
			}
		})
	}
}
