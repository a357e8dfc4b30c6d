package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlagValuesAreNamedPlainly holds flag errors to the flag's name and
// what it takes, never a parser's wording, and holds an empty --policy=
// to a usage error instead of a run of every variant.
func TestFlagValuesAreNamedPlainly(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    string
		notWant string
	}{
		{"negative seed", []string{"run", "--seed", "-1"}, `"--seed" flag: want an integer from 0 to 18446744073709551615`, "strconv"},
		{"seed not a number", []string{"run", "--seed", "seven"}, `"--seed" flag: want an integer from 0 to 18446744073709551615`, "strconv"},
		{"empty policy", []string{"run", "--policy="}, "--policy: empty: name a policy variant", "wrote"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append(c.args, "--progress", "none", "-o", out, scenarioDir+"quickstart.yaml")
			code, stdout, stderr := runCLI(t, args...)
			assert.Equal(t, exitUsage, code, "stdout: %s\nstderr: %s", stdout, stderr)
			assert.Contains(t, stderr, c.want)
			assert.NotContains(t, stdout+stderr, c.notWant)
			assert.NoDirExists(t, out)
		})
	}
}

// TestCountsAreInTheSingularForOne holds validate's and audit's counts to
// English: "1 population", not "1 populations".
func TestCountsAreInTheSingularForOne(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "one.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: one
duration: 2s
policy_file: `+filepath.Join(mustAbs(t, scenarioDir), "policies/game.yaml")+`
variants: [{name: only}]
populations:
  - {name: honest, behaviour: honest, count: 1}
thresholds:
  - honest.drop_rate < 1%
`), 0o644))
	code, stdout, stderr := runCLI(t, "validate", file)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "ok (1 population, 1 policy variant, 1 threshold)")

	pol := filepath.Join(dir, "pol.yaml")
	// One finding: the channel runs at the default rate.
	require.NoError(t, os.WriteFile(pol, []byte("channels:\n  - {name: move, class: input, burst: 5}\n"), 0o644))
	code, stdout, stderr = runCLI(t, "audit", "--policy", pol)
	require.NotEqual(t, exitUsage, code, stderr)
	assert.Contains(t, stdout, "DefaultRateLimit move")
	assert.True(t, strings.HasSuffix(stdout, "pol.yaml: 1 finding\n"), stdout)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}
