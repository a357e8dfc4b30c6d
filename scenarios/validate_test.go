package scenarios

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What validates must mean what was written: each of these is refused,
// naming the field, rather than run to measure nothing.
func TestValidateRefusesWhatCannotMeanWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.yaml"), nil, 0o644))
	const pops = "populations:\n  - {name: honest, behaviour: honest, count: 2}\n"
	game, err := filepath.Abs("policies/game.yaml")
	require.NoError(t, err)
	withGame := "name: t\nduration: 2s\npolicy_file: " + game + "\n"
	cases := []struct{ name, doc, want string }{
		{"empty inline policy", "name: t\nduration: 2s\npolicy:\n" + pops, "policy: is empty"},
		{"empty policy file", "name: t\nduration: 2s\npolicy_file: empty.yaml\n" + pops, "empty.yaml is empty"},
		{"misspelt kind", withGame + pops + "thresholds:\n  - honest.chta.drop_rate < 1%\n", `no message kind named "chta" (did you mean "chat"?)`},
		{"kind on a client metric", withGame + pops + "thresholds:\n  - honest.move.lockouts == 0\n", "lockouts counts clients"},
		{"population named all", withGame + "populations:\n  - {name: all, behaviour: honest, count: 2}\n", `"all" cannot be named in a threshold`},
		{"population with a dot", withGame + "populations:\n  - {name: eu.west, behaviour: honest, count: 2}\n", `"eu.west" cannot be named in a threshold`},
		{"fractional count", withGame + "populations:\n  - {name: honest, behaviour: honest, count: 2.5}\n", `"2.5" is not a valid integer`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc), filepath.Join(dir, "s.yaml"))
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
}
